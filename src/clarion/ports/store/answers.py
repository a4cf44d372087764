"""The answer path's view of the store (AnswerStore)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from clarion.domain.lifecycle import Transition
from clarion.domain.models import (
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

    Each bundle write applies named transitions of `domain.lifecycle` (its guard selects
    exactly the rows in the states those transitions leave). The caller names the transition
    in `transition_bundle` (one bundle), `transition_session_bundles` (a session's bundles)
    and `confirm_delivery` (DELIVER or RETIRE_INTENT, with a session move), the claim in
    `claim_response` (CLAIM or CLAIM_BY_POLICY) and the publication's in `publish_successor`
    (DELIVER)."""

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
        self, response: ClarificationResponse, claim: Transition, *, now: datetime
    ) -> ClaimResult:
        """Apply `claim` (CLAIM, or CLAIM_BY_POLICY for a `by_policy` response) to the
        bundle's pending rows in the current turn of a non-terminal session: write the
        provisional status (answered/rejected), the per-row response, and
        `response_delivery_pending=true`. Terminal siblings are untouched. CLAIM_BY_POLICY
        also claims the bundle's expiry, and applies only if that was still unfired.
        ValueError, nothing written, for another transition or one the response disagrees
        with."""
        ...

    async def transition_bundle(
        self,
        pending_id: str,
        transition: Transition,
        *,
        message_ids: Sequence[str] | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> tuple[Message, ...]:
        """The guarded call of one bundle's transitions: apply `transition` to the rows of
        bundle `pending_id` its guard (derived from the table) matches. Returns the rows it
        changed; () (nothing written) when it did not apply: the rows were not in a state it
        leaves, and the caller learns that from the result.

        A claim's transitions (RESTORE_CLAIM, DELIVER, RETIRE_INTENT) take the claim's
        `message_ids` and apply only while every one still carries the delivery intent and,
        for RESTORE_CLAIM, its turn is current and the session not ended. CANCEL acts on the
        bundle's pending rows in its session's current turn. MARK_UNREAD marks its delivered
        rows ambiguous unless they were resent already. CLAIM_RESEND marks its ambiguous
        rows while the session is live and no resend is in flight; RELEASE_RESEND and
        FINISH_RESEND (`values`: `lifecycle.resent_by(turn_id)`) act on the rows in flight.
        ValueError for a transition this call does not apply."""
        ...

    async def confirm_delivery(
        self,
        pending_id: str,
        message_ids: Sequence[str],
        transition: Transition,
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

    async def transition_session_bundles(
        self, session_id: str, transition: Transition, *, pending_id: str | None = None
    ) -> tuple[Message, ...]:
        """The guarded call of the transitions that act on a session's bundles at once: apply
        `transition` to every current-turn row of the session in a state it leaves (DETACH:
        pending, not yet detached, optionally only bundle `pending_id`; EXPIRE: pending,
        whatever the session's state, since it runs as the session terminates). Returns the
        rows it changed, so a repeat returns (). ValueError for another transition."""
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
        transition: Transition,
        *,
        pending_id: str,
        message_ids: Sequence[str],
        session_state: SessionState | None = None,
    ) -> Written | None:
        """Clear the dispatch keys on the turn and apply `transition` (DELIVER: the agent
        accepted the resume prompt) to the claimed rows still carrying the intent (None, nothing
        written, if the turn is no longer that reservation); with `session_state`, also move a
        non-terminal session there, in the same commit. ValueError, nothing written, for
        another transition."""
        ...

    async def rollback_successor(self, turn_id: str) -> bool:
        """Delete the reservation if no message references it. True if deleted."""
        ...
