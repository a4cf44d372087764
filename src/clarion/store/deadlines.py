"""DeadlineStore: the waiting policy's deadline rows, fired by guarded updates.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from clarion.domain.notification_events import (
    CLARIFICATION_ESCALATED,
    CLARIFICATION_REMINDER,
    NotificationFact,
)
from clarion.ports import Clock
from clarion.ports.store.records import DeadlineRecord
from clarion.store.db.engine import Db
from clarion.store.db.schema import clarification_deadlines as deadlines
from clarion.store.db.transactions import Tx
from clarion.store.deadline_rows import owned, settle_next_due, to_record
from clarion.store.outbox import OutboxWriter

log = logging.getLogger(__name__)


class SqlDeadlines:
    """`clarion.ports.store.deadlines.DeadlineStore` on SQL."""

    def __init__(self, db: Db, clock: Clock, outbox: OutboxWriter) -> None:
        self._db = db
        self._clock = clock
        self._outbox = outbox

    async def next_deadline_due(self, owner: str | None) -> datetime | None:
        query = select(deadlines.c.next_due_at).where(owned(owner))
        query = query.order_by(deadlines.c.next_due_at).limit(1)
        async with self._db.read_one() as conn:
            return (await conn.execute(query)).scalar()  # type: ignore[no-any-return]

    async def due_deadlines(
        self, owner: str | None, now: datetime, limit: int = 50
    ) -> list[DeadlineRecord]:
        query = (
            select(deadlines)
            .where(owned(owner), deadlines.c.next_due_at <= now)
            .order_by(deadlines.c.next_due_at, deadlines.c.pending_id)
            .limit(limit)
        )
        async with self._db.read_one() as conn:
            return [to_record(row) for row in await conn.execute(query)]

    async def find_deadlines(self, pending_ids: Sequence[str]) -> dict[str, DeadlineRecord]:
        if not pending_ids:
            return {}
        query = select(deadlines).where(deadlines.c.pending_id.in_(sorted(set(pending_ids))))
        async with self._db.read_one() as conn:
            return {row.pending_id: to_record(row) for row in await conn.execute(query)}

    async def record_reminder(
        self,
        record: DeadlineRecord,
        next_remind_at: datetime | None,
        questions: Sequence[dict[str, Any]],
    ) -> bool:
        """Move the reminder on from the one due (guarded on it, so it fires once) and queue
        `clarification.reminder` in the same commit."""
        due = record.deadlines
        now = self._clock.now()
        async with self._db.write() as conn:
            result = await conn.execute(
                update(deadlines)
                .where(
                    deadlines.c.pending_id == record.pending_id,
                    deadlines.c.remind_at == due.remind_at,
                )
                .values(remind_at=next_remind_at, reminders=deadlines.c.reminders + 1)
            )
            if result.rowcount != 1:
                return False
            await settle_next_due(conn, record.pending_id)
            await self._fact(conn, CLARIFICATION_REMINDER, record, questions, now)
        log.info("clarification reminder due", extra={"pending_id": record.pending_id})
        return True

    async def record_escalation(
        self, record: DeadlineRecord, questions: Sequence[dict[str, Any]]
    ) -> bool:
        """Escalate once (guarded on `escalated_at` unset): from this commit the named users
        may see and answer the question; `clarification.escalated` is queued with it."""
        due = record.deadlines
        now = self._clock.now()
        async with self._db.write() as conn:
            result = await conn.execute(
                update(deadlines)
                .where(
                    deadlines.c.pending_id == record.pending_id,
                    deadlines.c.escalated_at.is_(None),
                )
                .values(escalated_at=now)
            )
            if result.rowcount != 1:
                return False
            await settle_next_due(conn, record.pending_id)
            detail = ", ".join(due.escalate_to)
            await self._fact(conn, CLARIFICATION_ESCALATED, record, questions, now, detail)
        log.info(
            "clarification escalated",
            extra={"pending_id": record.pending_id, "users": list(due.escalate_to)},
        )
        return True

    async def _fact(
        self,
        conn: Tx,
        event: str,
        record: DeadlineRecord,
        questions: Sequence[dict[str, Any]],
        now: datetime,
        detail: str = "",
    ) -> None:
        await self._outbox.enqueue(
            conn,
            event,
            record.task_id,
            lambda title: NotificationFact(
                event,
                record.task_id,
                title,
                record.session_id,
                pending_id=record.pending_id,
                questions=tuple(questions),
                detail=detail,
                expires_at=record.scheduled_expiry,
                on_expiry=record.deadlines.on_expiry.value,
            ),
            now,
        )

    async def retire_deadlines(self, pending_id: str) -> bool:
        """The question no longer waits (answered, cancelled, superseded): nothing more fires."""
        return await self._move_due(pending_id, None)

    async def postpone_deadlines(self, pending_id: str, until: datetime) -> bool:
        """Look at this question again at `until` (its answer is being delivered: whether it
        still waits is known only then)."""
        return await self._move_due(pending_id, until)

    async def _move_due(self, pending_id: str, due: datetime | None) -> bool:
        """The one guarded update behind retiring (`due` None) and postponing: applies only
        while something of the question is still due."""
        async with self._db.write() as conn:
            result = await conn.execute(
                update(deadlines)
                .where(deadlines.c.pending_id == pending_id, deadlines.c.next_due_at.is_not(None))
                .values(next_due_at=due)
            )
        return result.rowcount == 1

    async def reopen_expiry(self, pending_id: str, retry_at: datetime) -> bool:
        """An expiry whose answer was not delivered (the question is pending again): fire it
        again at `retry_at`."""
        async with self._db.write() as conn:
            result = await conn.execute(
                update(deadlines)
                .where(deadlines.c.pending_id == pending_id, deadlines.c.expired_at.is_not(None))
                .values(expired_at=None, expire_at=retry_at, next_due_at=retry_at)
            )
        return result.rowcount == 1
