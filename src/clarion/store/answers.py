"""AnswerStore: the answer path's guarded writes (ask, claim, confirm, restore, detach,
expire, cancel), the detached resume's successor reservation and the person's resend. Each
call here checks that it applies the transition its caller named and hands it to the module
that writes it (`bundle_transitions`, `successor_turns`, `answer_statements` for the claim);
the rows it changes are those the transition's guard matched.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from clarion.domain.lifecycle import Transition
from clarion.domain.models import (
    ClarificationResponse,
    Message,
    MetaKey,
    Session,
    SessionState,
    Turn,
)
from clarion.domain.notification_events import (
    CLARIFICATION_REQUESTED,
    NotificationFact,
    questions_of_rows,
)
from clarion.domain.waiting import Deadlines
from clarion.ports import ClaimResult, Clock, NewMessage, Written
from clarion.store import answer_statements, bundle_transitions, successor_turns
from clarion.store.answer_statements import bundle_identity
from clarion.store.db.engine import Db
from clarion.store.deadline_rows import insert_deadlines
from clarion.store.messages import insert_message
from clarion.store.outbox import OutboxWriter
from clarion.store.tasks import move_with
from clarion.store.turn_rows import (
    read_session_and_current_turn,
)

log = logging.getLogger(__name__)


class SqlAnswers:
    """`clarion.ports.store.answers.AnswerStore` on SQL (`Lookups`: `SqlLookups`)."""

    def __init__(self, db: Db, clock: Clock, outbox: OutboxWriter) -> None:
        self._db = db
        self._clock = clock
        self._outbox = outbox

    async def session_with_current_turn(self, session_id: str) -> tuple[Session, str | None]:
        async with self._db.read_one() as conn:
            return await read_session_and_current_turn(conn, session_id)

    async def create_bundle(
        self,
        session_id: str,
        rows: Sequence[NewMessage],
        *,
        turn_id: str | None = None,
        session_state: SessionState | None = None,
        deadlines: Deadlines | None = None,
    ) -> Written:
        pending_id = bundle_identity(session_id, rows)
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            task_id, target = await answer_statements.place_bundle(
                conn, session_id, pending_id, turn_id
            )
            created = [
                await insert_message(conn, row, task_id=task_id, turn_id=target, now=now)
                for row in rows
            ]
            session = await move_with(conn, session_id, session_state, self._clock.now())
            deadline = (
                await insert_deadlines(conn, pending_id, session_id, task_id, deadlines)
                if deadlines is not None
                else None
            )
            await self._outbox.enqueue(
                conn,
                CLARIFICATION_REQUESTED,
                task_id,
                lambda title: NotificationFact(
                    CLARIFICATION_REQUESTED,
                    task_id,
                    title,
                    session_id,
                    pending_id=pending_id,
                    questions=questions_of_rows(created),
                    context=str(created[0].metadata.get(MetaKey.CONTEXT) or ""),
                    expires_at=deadline.scheduled_expiry if deadline else None,
                    on_expiry=deadline.deadlines.on_expiry.value if deadline else "",
                ),
                now,
            )
        log.info(
            "clarification bundle created",
            extra={"session_id": session_id, "turn_id": target, "pending_id": pending_id},
        )
        return Written(tuple(created), session, deadline)

    async def claim_response(
        self, response: ClarificationResponse, claim: Transition, *, now: datetime
    ) -> ClaimResult:
        return await answer_statements.claim_response(
            self._db, self._outbox, response, claim, now=now
        )

    async def transition_bundle(
        self,
        pending_id: str,
        transition: Transition,
        *,
        message_ids: Sequence[str] | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> tuple[Message, ...]:
        if transition not in bundle_transitions.ONE_BUNDLE:
            raise ValueError(f"{transition} is not a transition of one bundle")
        if bundle_transitions.names_its_rows(transition) != (message_ids is not None):
            raise ValueError(
                f"{transition} acts on a claim's rows: give their ids"
                if message_ids is None
                else f"{transition} acts on the rows its guard selects, not given ids"
            )
        written = await bundle_transitions.apply_to_bundle(
            self._db, self._clock, pending_id, transition, message_ids=message_ids, values=values
        )
        return () if written is None else written.rows

    async def confirm_delivery(
        self,
        pending_id: str,
        message_ids: Sequence[str],
        transition: Transition,
        *,
        session_state: SessionState | None = None,
    ) -> Written | None:
        if transition not in bundle_transitions.SETTLES_A_CLAIM:
            raise ValueError(f"{transition} does not settle a claim")
        return await bundle_transitions.apply_to_bundle(
            self._db,
            self._clock,
            pending_id,
            transition,
            message_ids=message_ids,
            to=session_state,
        )

    async def transition_session_bundles(
        self, session_id: str, transition: Transition, *, pending_id: str | None = None
    ) -> tuple[Message, ...]:
        if transition not in bundle_transitions.OF_A_SESSION:
            raise ValueError(f"{transition} is not a transition of a session's bundles")
        return await bundle_transitions.apply_to_session(
            self._db, self._clock, self._outbox, session_id, transition, pending_id
        )

    async def reserve_successor(
        self, session_id: str, *, source_turn_id: str, pending_id: str, message_ids: Sequence[str]
    ) -> Turn:
        return await successor_turns.reserve_successor(
            self._db,
            self._clock,
            session_id,
            source_turn_id=source_turn_id,
            pending_id=pending_id,
            message_ids=message_ids,
        )

    async def mark_attempted(self, turn_id: str) -> bool:
        return await successor_turns.mark_attempted(self._db, self._clock, turn_id)

    async def publish_successor(
        self,
        turn_id: str,
        transition: Transition,
        *,
        pending_id: str,
        message_ids: Sequence[str],
        session_state: SessionState | None = None,
    ) -> Written | None:
        return await successor_turns.publish_successor(
            self._db,
            self._clock,
            turn_id,
            transition,
            pending_id=pending_id,
            message_ids=message_ids,
            session_state=session_state,
        )

    async def rollback_successor(self, turn_id: str) -> bool:
        return await successor_turns.rollback_successor(self._db, turn_id)
