"""What a Slack question costs the server: CPU per message through the durable outbox, and
the messages per second the outbox delivered, against a Slack stand-in on loopback.

Two servers side by side (`bench.feature_costs`): one posting each question to Slack and
updating the message once it is answered (`chat.postMessage`, `chat.update`: events
`clarification.requested` and `.answered`), one without Slack. A window on the Slack server
ends only once the stand-in has every message of the window's cycles (`OutboxDrained`), so
the outbox's whole work is in it: the rows written by the cycle's transactions, the
deliverer's lease, the Web API calls, the message's record and the close's claim. The figure
is each round's (with Slack - without) CPU over the window's cycles, per message delivered.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

from bench.loopback_sinks import SlackStandIn
from bench.paired import Setup
from bench.stats import Row, ms
from bench.throughput import McpThroughput
from clarion.domain.notification_events import CLARIFICATION_ANSWERED, CLARIFICATION_REQUESTED

POST, UPDATE = "chat.postMessage", "chat.update"
DRAIN_LIMIT_S = 120.0
# Short enough that a failed attempt (none expected) does not hold a window up for long.
SERVER_ENV = {"CLARION_WEBHOOK_BACKOFF_S": "0.1", "CLARION_WEBHOOK_MAX_DELAY_S": "0.5"}


@dataclass(frozen=True)
class Delivered:
    """The messages the stand-in received from a window's start to its last one."""

    messages: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.messages / max(self.seconds, 1e-9)


class OutboxDrained:
    """A window's `settle`: waits until the stand-in holds a post and an update for every
    question asked so far. Called in pairs (a window's start, then its end), with the cycles
    of the current measurement so far; each pair leaves one `Delivered`."""

    def __init__(self, stand_in: SlackStandIn) -> None:
        self._stand_in = stand_in
        self._earlier = 0  # cycles of the measurements before this one
        self._start: tuple[float, int] | None = None
        self.windows: list[Delivered] = []

    def _messages(self) -> int:
        return self._stand_in.counts.get(POST) + self._stand_in.counts.get(UPDATE)

    async def __call__(self, cycles: int) -> None:
        questions = self._earlier + cycles
        wanted = {POST: questions, UPDATE: questions}
        await asyncio.to_thread(self._stand_in.counts.wait_for, wanted, DRAIN_LIMIT_S)
        now = time.monotonic()
        if self._start is None:
            self._start = (now, self._messages())
            return
        began, before = self._start
        self.windows.append(Delivered(self._messages() - before, now - began))
        self._earlier, self._start = questions, None


def setup(stand_in: SlackStandIn) -> Setup:
    """A server posting each question to the stand-in and updating it once answered."""
    events = (CLARIFICATION_REQUESTED, CLARIFICATION_ANSWERED)
    return Setup(config=stand_in.config(events), env={**stand_in.env(), **SERVER_ENV})


def rows(
    db: str,
    slack: list[McpThroughput],
    without: list[McpThroughput],
    delivered: list[Delivered],
    sessions: int,
) -> list[Row]:
    """`delivered`: the Slack server's measured windows (no warm-up), in round order."""
    per_message = [
        (on.server_cpu_per_cycle - off.server_cpu_per_cycle) * on.cycles / max(1, sent.messages)
        for on, off, sent in zip(slack, without, delivered, strict=True)
    ]
    cpu = statistics.median(ms(p) for p in per_message)
    rate = statistics.median(d.rate for d in delivered)
    with_ms, without_ms = (
        statistics.median(ms(w.server_cpu_per_cycle) for w in side) for side in (slack, without)
    )
    rate_with, rate_without = (statistics.median(w.rate for w in side) for side in (slack, without))
    return [
        Row(
            db,
            "Slack: server CPU per message through the outbox (post, chat.update); messages/s, "
            f"{sessions} sessions (MCP clients)",
            f"{cpu:.2f} ms; {rate:.0f}/s",
            note=f"median of the rounds' (with - without) per message "
            f"({', '.join(f'{ms(p):.2f}' for p in per_message)} ms); per cycle {with_ms:.2f} "
            f"vs {without_ms:.2f} ms and {rate_with:.0f} vs {rate_without:.0f} cycles/s with "
            "Slack and without; a stand-in on loopback",
        )
    ]
