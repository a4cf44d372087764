"""Deadlines of questions asked under a waiting policy: written with the question, read by the
scheduler and the bundle reads, and fired by guarded updates that report whether they applied.

Used by `SqlDeadlines`, `SqlAccess` and the answer path (which writes a question's deadlines
in the transaction that writes the question, and claims its expiry in the transaction that
claims the response). A question without a policy has no row, so it pays nothing here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import and_, insert, select, update

from clarion.domain.models import Message, MetaKey
from clarion.domain.waiting import (
    ANSWERED_BY_POLICY,
    EXPIRY_RETRY_S,
    Deadlines,
    Duration,
    OnExpiry,
    parse_duration,
)
from clarion.ports.store.records import DeadlineRecord
from clarion.store.db.row_conversion import Record
from clarion.store.db.schema import clarification_deadlines as deadlines
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx

log = logging.getLogger(__name__)


async def insert_deadlines(
    conn: Tx, pending_id: str, session_id: str, task_id: str, due: Deadlines
) -> DeadlineRecord:
    """The question's deadline row, in the caller's (the question's) transaction; returns it
    as a read would, so the caller can announce and arm it without reading it back."""
    every = due.remind_every
    values: dict[str, Any] = {
        "pending_id": pending_id,
        "session_id": session_id,
        "task_id": task_id,
        "waiting_since": due.waiting_since,
        "remind_every_s": every.seconds if every else None,
        "remind_after": every.text if every else None,
        "remind_at": due.remind_at,
        "reminders": 0,
        "escalate_at": due.escalate_at,
        "escalate_to": {"users": list(due.escalate_to)},
        "escalated_at": None,
        "expire_at": due.expire_at,
        "expire_after": due.expire_after.text if due.expire_after else None,
        "on_expiry": due.on_expiry.value,
        "expired_at": None,
        "next_due_at": due.next_due,
    }
    await conn.execute(insert(deadlines).values(**values))
    return to_record(SimpleNamespace(**values))


async def claim_expiry(conn: Tx, pending_id: str, now: datetime) -> bool:
    """The expiry fires once: set `expired_at` where it is still unset. Run in the transaction
    that claims the policy's response, so the two apply together or not at all."""
    result = await conn.execute(
        update(deadlines)
        .where(deadlines.c.pending_id == pending_id, deadlines.c.expired_at.is_(None))
        .values(expired_at=now, next_due_at=None)
    )
    return result.rowcount == 1


async def settle_next_due(conn: Tx, pending_id: str) -> None:
    """`next_due_at` := the earliest timer still to fire, after one of them fired."""
    row = (await conn.execute(select(deadlines).where(deadlines.c.pending_id == pending_id))).one()
    await conn.execute(
        update(deadlines)
        .where(deadlines.c.pending_id == pending_id)
        .values(next_due_at=to_record(row).deadlines.next_due)
    )


async def reopen_restored_expiry(conn: Tx, rows: Sequence[Message], now: datetime) -> None:
    """Claimed rows the expiry answered are being restored (the answer was not delivered):
    in the same transaction, the expiry is due again shortly, so the question does not wait on
    as if it had none."""
    pending_ids = sorted(
        {
            m.pending_id
            for m in rows
            if m.pending_id and m.metadata.get(MetaKey.ANSWERED_BY) == ANSWERED_BY_POLICY
        }
    )
    for pending_id in pending_ids:
        again = now + timedelta(seconds=EXPIRY_RETRY_S)
        await conn.execute(
            update(deadlines)
            .where(deadlines.c.pending_id == pending_id, deadlines.c.expired_at.is_not(None))
            .values(expired_at=None, expire_at=again, next_due_at=again)
        )


def to_record(row: Record) -> DeadlineRecord:
    every = (
        Duration(row.remind_after, int(row.remind_every_s))
        if row.remind_every_s is not None and row.remind_after
        else None
    )
    users = row.escalate_to.get("users", [])
    expire_after = _duration(row.expire_after)
    return DeadlineRecord(
        pending_id=row.pending_id,
        session_id=row.session_id,
        task_id=row.task_id,
        deadlines=Deadlines(
            waiting_since=row.waiting_since,
            remind_every=every,
            remind_at=row.remind_at,
            escalate_at=None if row.escalated_at is not None else row.escalate_at,
            escalate_to=tuple(str(u) for u in users if isinstance(u, str)),
            expire_at=None if row.expired_at is not None else row.expire_at,
            expire_after=expire_after,
            on_expiry=OnExpiry(row.on_expiry),
        ),
        reminders=int(row.reminders),
        escalated_at=row.escalated_at,
        expired_at=row.expired_at,
        scheduled_expiry=row.expire_at,
        next_due_at=row.next_due_at,
    )


def _duration(text: str | None) -> Duration | None:
    return parse_duration(text) if text else None


def owned(owner: str | None) -> Any:
    """Deadlines of sessions this server runs: all of them in single mode, a replica's own
    (or adopted) ones in a cluster."""
    if owner is None:
        return deadlines.c.next_due_at.is_not(None)
    mine = select(task_sessions.c.id).where(task_sessions.c.owner_replica_id == owner)
    return and_(deadlines.c.next_due_at.is_not(None), deadlines.c.session_id.in_(mine))
