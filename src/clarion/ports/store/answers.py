"""The answer path's view of the store (AnswerStore)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from clarion.domain.lifecycle import RETIRE_INTENT, Transition
from clarion.domain.models import (
    BundleState,
    ClarificationResponse,
    Message,
    Session,
    SessionState,
    Turn,
)
from clarion.domain.waiting import Deadlines
from clarion.ports.store.lookups import Lookups
from clarion.ports.store.records import (
    ClaimResult,
    NewMessage,
    Written,
)


class AnswerStore(Lookups, Protocol):
    """The answer path: asking, claiming, confirming, restoring, detaching, the detached
    resume's reservation and the person's resend. Every write holds the session's lock; each
    returns what it changed, so a guarded update that did not apply is an empty tuple, None or
    False, never an exception.

    Each bundle write is the guarded call of named transitions of `domain.lifecycle` (its
    guard selects exactly the rows in the states those transitions leave): `claim_response`
    CLAIM, `transition_bundle` RESTORE_CLAIM, DELIVER or RETIRE_INTENT and `confirm_delivery`
    DELIVER or RETIRE_INTENT (the caller names the transition), `detach_bundles` DETACH,
    `expire_bundles` EXPIRE, `cancel_bundle` CANCEL, `publish_successor` DELIVER,
    `claim_resend` CLAIM_RESEND, `release_resend` RELEASE_RESEND, `finish_resend`
    FINISH_RESEND."""

    async def session_with_current_turn(self, session_id: str) -> tuple[Session, str | None]:
        """The session (NotFound if missing) and its current turn id, from one read."""
        ...

    async def create_bundle(
        self,
        session_id: str,
        rows: Sequence[NewMessage],
        *,
        turn_id: str | None = None,
        session_state: SessionState | None = None,
        deadlines: Deadlines | None = None,
    ) -> Written:
        """Insert all rows of one bundle in the given (default: current) turn, or none; with
        `session_state`, also move a non-terminal session there, in the same commit; with
        `deadlines`, also write the question's waiting-policy row, in the same commit."""
        ...

    async def claim_response(
        self, response: ClarificationResponse, *, now: datetime
    ) -> ClaimResult:
        """Claim the bundle's pending rows in the current turn of a non-terminal session:
        write the provisional status (answered/rejected), the per-row response, and
        `response_delivery_pending=true`. Terminal siblings are untouched. A policy's
        response (`by_policy`) also claims the bundle's expiry, and applies only if that was
        still unfired."""
        ...

    async def transition_bundle(
        self,
        pending_id: str,
        message_ids: Sequence[str],
        expected: BundleState,
        transition: Transition,
    ) -> bool:
        """The guarded call of a claim's transitions: apply `transition` (RESTORE_CLAIM,
        DELIVER or RETIRE_INTENT) to exactly these rows of the bundle, only while every one is
        still in `expected` (delivery_claimed: it carries the delivery intent) and, for
        RESTORE_CLAIM, its turn is current and the session not ended. True when it applied;
        False, nothing written, when any row had moved on. TransitionNotAllowed when the
        table does not let `transition` leave `expected`; ValueError for another transition."""
        ...

    async def confirm_delivery(
        self,
        pending_id: str,
        message_ids: Sequence[str],
        transition: Transition = RETIRE_INTENT,
        *,
        session_state: SessionState | None = None,
    ) -> Written | None:
        """Settle a claim and say what it left: apply `transition` (DELIVER: the agent has the
        response, recorded `delivery: "delivered"`; RETIRE_INTENT: nothing to hand over) to
        exactly these rows, which must all still carry the delivery intent (None otherwise,
        nothing written). With `session_state`, a confirmation that applies also moves the
        session (from any non-terminal state) to it in the same transaction, saving a
        commit."""
        ...

    async def detach_bundles(
        self, session_id: str, *, pending_id: str | None = None
    ) -> tuple[Message, ...]:
        """Mark current-turn pending, not-yet-detached rows `agent_disconnected`. Returns only
        the rows it changed, so a repeat returns ()."""
        ...

    async def expire_bundles(self, session_id: str) -> tuple[Message, ...]:
        """Current-turn pending rows -> status expired (+ agent_disconnected). Changed rows only.
        Applies whatever the session's state, since it runs as the session terminates."""
        ...

    async def cancel_bundle(self, pending_id: str) -> tuple[Message, ...]:
        """Pending rows of the bundle -> cancelled. Changed rows only."""
        ...

    async def reserve_successor(
        self, session_id: str, *, source_turn_id: str, pending_id: str, message_ids: Sequence[str]
    ) -> Turn:
        """An unpublished successor turn carrying kandev's dispatch keys (the recovery identity:
        source turn, pending id, exactly the claimed message ids). Conflict when a reservation is
        already live, the session ended, or `source_turn_id` is no longer current; InvalidInput for
        empty ids. Not current-turn authority until attempted or referenced.
        """
        ...

    async def mark_attempted(self, turn_id: str) -> bool:
        """Set `prompt_dispatch_attempted` on a live reservation (the at-most-once boundary);
        False when the turn is not one.
        """
        ...

    async def publish_successor(
        self,
        turn_id: str,
        *,
        pending_id: str,
        message_ids: Sequence[str],
        session_state: SessionState | None = None,
    ) -> Written | None:
        """Clear the dispatch keys on the turn and the intents on exactly the claimed rows
        (None if the turn is no longer that reservation);
        with `session_state`, also move a non-terminal session there, in the same commit."""
        ...

    async def rollback_successor(self, turn_id: str) -> bool:
        """Delete the reservation if no message references it. True if deleted."""
        ...

    async def claim_resend(self, pending_id: str) -> tuple[Message, ...]:
        """Mark the bundle's `delivery: "ambiguous"` rows `resend_pending`; () (nothing
        written) when none is ambiguous, a resend is already in flight, or the session
        ended. Returns the claimed rows."""
        ...

    async def release_resend(self, pending_id: str) -> tuple[Message, ...]:
        """A resend the agent did not accept: drop `resend_pending`, so the rows read
        ambiguous again. Returns the rows it changed."""
        ...

    async def finish_resend(self, pending_id: str, turn_id: str) -> tuple[Message, ...]:
        """The agent accepted the resend started in `turn_id`: the rows in flight record
        `delivery: "delivered"` and `resent_turn_id`. Returns the rows it changed."""
        ...
