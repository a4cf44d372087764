"""Answering queued Slack interactions through the respond path, exactly as
`POST /clarification/{pending_id}/respond` would, and showing each outcome to the person.

An interaction was written to the queue before Slack got its 200, so a server killed between
the acknowledgement and the answer (failpoint `slack.after_ack`) answers it after the restart.
Each is claimed with a lease first (a guarded update), so two workers never answer it side by
side, and its outcome is recorded once. A claim that outlived a crash mid-answer is taken up
again: the respond path's own claim makes that answer apply at most once, and a 409 whose
winner is this very answer counts as answered.

Outcomes: answered (the message is closed, naming the mapped user), a 409 or a bad answer (an
ephemeral message to that Slack user), a retryable server error (the person is told to try
again), or a failure before any outcome (retried with backoff).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from clarion.domain.errors import (
    AcceptedButUnfinalized,
    InvalidInput,
    NotActive,
    NotFound,
    RetryableFailure,
)
from clarion.domain.notification_events import retry_delay
from clarion.domain.slack import SlackInteraction
from clarion.ports import Clock
from clarion.ports.slack import SlackStore
from clarion.runtime import failpoints
from clarion.slack.client import SlackApi
from clarion.slack.closer import ANSWERED, SlackCloser

log = logging.getLogger(__name__)

BATCH = 20
LEASE_S = 300.0  # longer than any answer waits for an agent's acceptance
# The fallback look for queued clicks nobody told this answerer of: a click queued here wakes
# it directly, one queued on another replica through the bus (wakeups.py), and a retry it
# scheduled when that falls due, an adoption through `take_up`; this catches a lost word.
POLL_S = 10.0
BACKOFF_S = 1.0


class Respond(Protocol):
    """The respond path (the resolver's `respond`), naming who answered."""

    def __call__(
        self, pending_id: str, body: object, *, answered_by: str | None = None
    ) -> Awaitable[object]: ...


def _same_answer(ours: Mapping[str, Any], winner: Mapping[str, Any] | None) -> bool:
    """Whether the response that won is the one this interaction sent."""
    if winner is None or bool(ours.get("rejected")) != bool(winner.get("rejected")):
        return False
    if ours.get("rejected"):
        return True

    def key(answers: Any) -> set[tuple[str, tuple[str, ...], str]]:
        return {
            (
                str(a.get("question_id")),
                tuple(sorted(a.get("selected_options") or ())),
                str(a.get("custom_text") or "").strip(),
            )
            for a in answers or ()
        }

    return key(ours.get("answers")) == key(winner.get("answers"))


class SlackAnswerer:
    def __init__(
        self,
        store: SlackStore,
        respond: Respond,
        closer: SlackCloser,
        api_for: Callable[[str], Awaitable[SlackApi | None]],
        clock: Clock,
        poll_s: float = POLL_S,
        owner: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._owner = owner
        self._store = store
        self._respond = respond
        self._closer = closer
        self._api_for = api_for
        self._clock = clock
        self._poll_s = poll_s
        self._wake = asyncio.Event()
        self._retry_at: datetime | None = None  # the earliest retry this answerer scheduled

    def wake(self) -> None:
        self._wake.set()

    async def take_up(self, session_ids: Collection[str]) -> int:
        """Cluster mode: sessions this replica adopted from a dead one are its to answer now.
        The claims the dead replica held are released (it will never finish them, and their
        lease would keep them for minutes), then this answerer is woken: nothing else tells it
        of clicks queued for those sessions before its fallback look. The release is committed
        first; the wake is a hint, given even when the release failed, for the unclaimed ones.
        Returns how many claims were released."""
        try:
            return await self._store.release_slack_claims_of_sessions(
                session_ids, self._clock.now()
            )
        finally:
            self.wake()

    async def run(self) -> None:
        """Answer until cancelled; first take up what a previous process left claimed."""
        await self._store.release_slack_claims(self._owner(), self._clock.now())
        while True:
            self._wake.clear()
            try:
                await self.answer_due()
            except Exception:
                log.exception("slack answer pass failed; trying again")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._wait_s())

    def _wait_s(self) -> float:
        """Until the fallback look, or sooner when a retry this answerer scheduled falls due."""
        if self._retry_at is None:
            return self._poll_s
        left = (self._retry_at - self._clock.now()).total_seconds()
        return max(0.0, min(self._poll_s, left))

    async def answer_due(self) -> int:
        now = self._clock.now()
        if self._retry_at is not None and self._retry_at <= now:
            self._retry_at = None  # this pass takes it
        due = await self._store.due_slack_interactions(self._owner(), now, BATCH)
        for interaction in due:
            await self._answer(interaction)
        return len(due)

    async def _answer(self, interaction: SlackInteraction) -> None:
        now = self._clock.now()
        if not await self._store.claim_slack_interaction(
            interaction.id,
            attempts_before=interaction.attempts,
            now=now,
            lease_until=now + timedelta(seconds=LEASE_S),
        ):
            return  # another worker has it
        extra = {
            "interaction_id": interaction.id,
            "pending_id": interaction.pending_id,
            "slack_user": interaction.slack_user,
            "user": interaction.user,
            "attempt": interaction.attempts + 1,
        }
        await failpoints.hit("slack.after_ack")
        body = json.loads(interaction.body)
        tell: str | None = None
        try:
            await self._respond(interaction.pending_id, body, answered_by=interaction.user)
            outcome = ANSWERED
        except NotActive as exc:
            if interaction.attempts > 0 and _same_answer(body, exc.response):
                outcome = ANSWERED  # this answer won in an attempt a crash interrupted
            else:
                outcome, tell = "conflict", await self._conflict_text(interaction, exc)
        except InvalidInput as exc:
            outcome, tell = "invalid", f"Clarion could not take that answer: {exc.message}"
        except NotFound:
            outcome = "not_found"
        except AcceptedButUnfinalized:
            outcome = ANSWERED
        except RetryableFailure as exc:
            outcome = "failed"
            tell = f"Clarion could not deliver your answer ({exc.code}); please try again."
        except Exception as exc:  # the database or the server failed before any outcome
            delay = retry_delay(interaction.attempts + 1, BACKOFF_S, 60.0)
            retry_at = self._clock.now() + timedelta(seconds=delay)
            await self._store.retry_slack_interaction(
                interaction.id, next_attempt_at=retry_at, error=f"{type(exc).__name__}: {exc}"
            )
            self._retry_at = retry_at if self._retry_at is None else min(self._retry_at, retry_at)
            log.warning(
                "slack answer failed; will retry",
                extra={**extra, "error": str(exc)[:300], "retry_in_s": delay},
            )
            return
        recorded = await self._store.finish_slack_interaction(
            interaction.id, outcome=outcome, detail=tell
        )
        log.info(
            "slack interaction answered", extra={**extra, "outcome": outcome, "recorded": recorded}
        )
        if outcome == ANSWERED:
            self._closer.watch(interaction.pending_id)
        elif tell is not None and interaction.channel:
            await self._best_effort(self._tell(interaction, tell))

    async def _conflict_text(self, interaction: SlackInteraction, exc: NotActive) -> str | None:
        earlier = await self._store.slack_interactions_of(interaction.pending_id)
        if any(
            e.slack_user == interaction.slack_user and e.outcome == ANSWERED
            for e in earlier
            if e.id != interaction.id
        ):
            return None  # a double click: the first one answered, the message shows it
        if exc.response is not None:
            return "This question was already answered; your answer was not sent."
        return f"This question is no longer open ({exc.state}); your answer was not sent."

    async def _tell(self, interaction: SlackInteraction, text: str) -> None:
        api = await self._api_for(interaction.pending_id)
        if api is not None and interaction.channel:
            await api.post_ephemeral(interaction.channel, interaction.slack_user, text)

    @staticmethod
    async def _best_effort(call: Awaitable[object]) -> None:
        try:
            await call
        except Exception as exc:  # Slack refused: the sweep still closes the message
            log.warning("slack follow-up failed", extra={"error": str(exc)[:300]})
