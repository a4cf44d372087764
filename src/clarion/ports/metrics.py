"""What the services and the edges tell an operator's metrics, and what the store tells them.

`Metrics` is recorded in process, where each thing happens: a handful of counter increments,
never a read. `OperationalFigures` is the store's side: one cheap read of what is waiting, taken
only when someone scrapes (and cached). The Prometheus adapter (`clarion.metrics`) implements
both sides; nothing here knows Prometheus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

AnswerOutcome = Literal["accepted", "conflict", "invalid", "retryable_error", "error"]
RespondPath = Literal["live", "detached"]
DeliveryResult = Literal["delivered", "retry", "failed"]


class Metrics(Protocol):
    def answer(self, outcome: AnswerOutcome) -> None:
        """An answer (or Skip) request ended with this outcome."""

    def respond_seconds(self, path: RespondPath, seconds: float) -> None:
        """An accepted answer took this long from request to reply, handed to a live waiter
        (`live`) or stored for a detached question (`detached`)."""

    def agent_started(self) -> None:
        """An agent process started and opened its ACP session."""

    def agent_failed(self) -> None:
        """An agent failure a person can see was recorded (start, prompt or exit)."""

    def resumed(self) -> None:
        """A detached answer started a new turn the agent accepted."""

    def ambiguous_deliveries(self, count: int) -> None:
        """Startup recovery found answers the agent may or may not have received."""

    def delivery_attempt(self, result: DeliveryResult) -> None:
        """One attempt of an outbox delivery ended (a webhook POST, an email, a Slack message):
        delivered, to be retried, or given up."""

    def carried_request(self) -> None:
        """Cluster mode: a request was carried to the replica that owns its session."""

    def adopted(self, sessions: int) -> None:
        """Cluster mode: this replica adopted a dead peer's sessions."""


class NoMetrics:
    """Records nothing: the default of every service constructed without metrics (tests)."""

    def answer(self, outcome: AnswerOutcome) -> None:
        pass

    def respond_seconds(self, path: RespondPath, seconds: float) -> None:
        pass

    def agent_started(self) -> None:
        pass

    def agent_failed(self) -> None:
        pass

    def resumed(self) -> None:
        pass

    def ambiguous_deliveries(self, count: int) -> None:
        pass

    def delivery_attempt(self, result: DeliveryResult) -> None:
        pass

    def carried_request(self) -> None:
        pass

    def adopted(self, sessions: int) -> None:
        pass


NO_METRICS: Metrics = NoMetrics()


@dataclass(frozen=True, slots=True)
class WaitingQuestion:
    """A bundle whose person owes an answer: pending in its live session's current turn."""

    pending_id: str
    workspace: str
    asked_at: datetime


@dataclass(frozen=True, slots=True)
class OperationalFigures:
    """What the database says right now; the gauges are drawn from it."""

    waiting: tuple[WaitingQuestion, ...] = ()
    sessions: Mapping[str, int] = field(default_factory=dict)  # state -> count
    permissions_pending: int = 0
    # The outbox's deliveries, every channel's: pending|failed -> count.
    deliveries: Mapping[str, int] = field(default_factory=dict)
    replicas: int = 0  # live rows in clarion_replicas (cluster mode)
    now: datetime | None = None  # the database's clock when read


class FiguresStore(Protocol):
    async def operational_figures(self) -> OperationalFigures:
        """One read-only snapshot for the gauges: waiting questions (with workspace and asked
        time), sessions by state, pending permission requests, open and given-up outbox
        deliveries (every channel's), live replicas. Never writes, never takes a lock."""


class Exposition(Protocol):
    async def render(self) -> tuple[bytes, str]:
        """The metrics in Prometheus' text format, and its content type."""
