"""AnswerStore: the answer path's guarded writes (ask, claim, confirm, restore, detach,
expire, cancel), the detached resume's successor reservation and the person's resend.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from clarion.domain.lifecycle import (
    CANCEL,
    DETACH,
    EXPIRE,
    RESTORE_CLAIM,
    Transition,
)
from clarion.domain.models import (
    BundleState,
    ClarificationResponse,
    Message,
    Session,
    SessionState,
    Turn,
)
from clarion.domain.waiting import Deadlines
from clarion.domain.webhooks import (
    CLARIFICATION_DETACHED,
    CLARIFICATION_REQUESTED,
    WebhookFact,
    questions_of_rows,
)
from clarion.ports import ClaimResult, Clock, NewMessage, Written
from clarion.store import answer_statements, resends, successor_turns
from clarion.store.answer_statements import (
    _WITH_INTENT,
    DETACHABLE,
    DETACHABLE_BUNDLE,
    PENDING_OF_BUNDLE,
    PENDING_OF_SESSION,
    RESTORABLE,
    SETTLES_A_CLAIM,
    bundle_identity,
    detached_fact,
    pending_id_of,
)
from clarion.store.bundle_rows import (
    lock_bundle_session,
    rewrite,
    run_rows,
)
from clarion.store.db.engine import Db
from clarion.store.deadline_rows import insert_deadlines, reopen_restored_expiry
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
                lambda title: WebhookFact(
                    CLARIFICATION_REQUESTED,
                    task_id,
                    title,
                    session_id,
                    pending_id=pending_id,
                    questions=questions_of_rows(created),
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
        expected: BundleState,
        transition: Transition,
        *,
        message_ids: Sequence[str] | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> tuple[Message, ...]:
        transition.check(expected)
        if transition in SETTLES_A_CLAIM or transition is RESTORE_CLAIM:
            if message_ids is None:
                raise ValueError(f"{transition} acts on a claim's rows: give their ids")
            if transition is RESTORE_CLAIM:
                return await self._restore(pending_id, message_ids)
            written = await self._settle(pending_id, message_ids, transition, None)
            return () if written is None else written.rows
        if message_ids is not None:
            raise ValueError(f"{transition} acts on the rows its guard selects, not given ids")
        if transition is CANCEL:
            return await self._cancel(pending_id)
        if transition in resends.RESEND_TRANSITIONS:
            return await resends.transition_resend(self._db, pending_id, transition, values)
        raise ValueError(f"{transition} is not a transition of one bundle")

    async def confirm_delivery(
        self,
        pending_id: str,
        message_ids: Sequence[str],
        transition: Transition,
        *,
        session_state: SessionState | None = None,
    ) -> Written | None:
        return await self._settle(pending_id, message_ids, transition, session_state)

    async def _settle(
        self, pending_id: str, ids: Sequence[str], transition: Transition, to: SessionState | None
    ) -> Written | None:
        """DELIVER or RETIRE_INTENT on exactly these rows, all still carrying the intent."""
        if transition not in SETTLES_A_CLAIM:
            raise ValueError(f"{transition} does not settle a claim")
        wanted = set(ids)
        async with self._db.write() as conn:
            if not wanted:
                return None
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return None
            rows = await run_rows(
                conn, _WITH_INTENT, {"message_ids": sorted(wanted), "pending_id": pending_id}
            )
            if len(rows) != len(wanted):
                return None
            confirmed = await rewrite(conn, rows, transition)
            session = await move_with(conn, session_id, to, self._clock.now())
        log.info("clarification delivery confirmed", extra={"pending_id": pending_id})
        return Written(confirmed, session)

    async def _restore(self, pending_id: str, message_ids: Sequence[str]) -> tuple[Message, ...]:
        """RESTORE_CLAIM on these rows, still claimed in a current turn; a fired expiry reopens."""
        wanted = set(message_ids)
        async with self._db.write() as conn:
            if not wanted:
                return ()
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return ()
            rows = await run_rows(
                conn,
                RESTORABLE,
                {"message_ids": sorted(wanted), "pending_id": pending_id, "session_id": session_id},
            )
            if len(rows) != len(wanted):
                return ()
            restored = await rewrite(conn, rows, RESTORE_CLAIM, now=self._clock.now())
            await reopen_restored_expiry(conn, rows, self._clock.now())
        log.info("clarification claim restored", extra={"pending_id": pending_id})
        return restored

    async def transition_session_bundles(
        self, session_id: str, transition: Transition, *, pending_id: str | None = None
    ) -> tuple[Message, ...]:
        if transition is DETACH:
            return await self._detach(session_id, pending_id)
        if transition is EXPIRE:
            if pending_id is not None:
                raise ValueError(f"{transition} acts on a whole session's bundles, not one bundle")
            return await self._expire(session_id)
        raise ValueError(f"{transition} is not a transition of a session's bundles")

    async def _detach(self, session_id: str, pending_id: str | None) -> tuple[Message, ...]:
        query, params = DETACHABLE, {"session_id": session_id}
        if pending_id is not None:
            query, params = DETACHABLE_BUNDLE, {**params, "pending_id": pending_id}
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            rows = await run_rows(conn, query, params)
            now = self._clock.now()
            changed = await rewrite(conn, rows, DETACH, now=now)
            await self._detached(conn, changed, now)
        if changed:
            log.info(
                "clarification bundles detached",
                extra={
                    "session_id": session_id,
                    "pending_ids": sorted({pending_id_of(m) for m in changed}),
                },
            )
        return changed

    async def _expire(self, session_id: str) -> tuple[Message, ...]:
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            rows = await run_rows(conn, PENDING_OF_SESSION, {"session_id": session_id})
            changed = await rewrite(conn, rows, EXPIRE, now=self._clock.now())
        if changed:
            log.info("clarification bundles expired", extra={"session_id": session_id})
        return changed

    async def _cancel(self, pending_id: str) -> tuple[Message, ...]:
        # Only operationally pending rows: superseded history is never rewritten.
        async with self._db.write() as conn:
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return ()
            rows = await run_rows(
                conn, PENDING_OF_BUNDLE, {"pending_id": pending_id, "session_id": session_id}
            )
            changed = await rewrite(conn, rows, CANCEL, now=self._clock.now())
        if changed:
            log.info("clarification bundle cancelled", extra={"pending_id": pending_id})
        return changed

    async def _detached(self, conn: Any, changed: Sequence[Message], now: datetime) -> None:
        """One `clarification.detached` per bundle that changed, with all its pending rows."""
        by_bundle: dict[str, list[Message]] = {}
        for row in changed:
            by_bundle.setdefault(pending_id_of(row), []).append(row)
        for pending_id, rows in sorted(by_bundle.items()):
            first = rows[0]
            await self._outbox.enqueue(
                conn,
                CLARIFICATION_DETACHED,
                first.task_id,
                functools.partial(detached_fact, pending_id, rows),
                now,
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
