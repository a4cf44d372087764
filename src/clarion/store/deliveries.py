"""OutboxStore: the deliverer's reads and guarded updates of the notification outbox's
deliveries, every channel's (the table keeps its first name, `webhook_deliveries`).

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from clarion.ports import Clock, QueuedDelivery
from clarion.store.db.engine import Db
from clarion.store.db.schema import webhook_deliveries
from clarion.store.outbox import OPEN, queued_delivery

log = logging.getLogger(__name__)


class SqlDeliveries:
    """`clarion.ports.store.outbox.OutboxStore` on SQL."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def due_deliveries(self, now: datetime, limit: int) -> list[QueuedDelivery]:
        query = (
            select(webhook_deliveries)
            .where(OPEN, webhook_deliveries.c.next_attempt_at <= now)
            .order_by(webhook_deliveries.c.next_attempt_at, webhook_deliveries.c.id)
            .limit(limit)
        )
        async with self._db.read() as conn:
            return [queued_delivery(row) for row in await conn.execute(query)]

    async def next_delivery_at(self) -> datetime | None:
        query = (
            select(webhook_deliveries.c.next_attempt_at)
            .where(OPEN)
            .order_by(webhook_deliveries.c.next_attempt_at)
            .limit(1)
        )
        async with self._db.read() as conn:
            value = (await conn.execute(query)).scalar()
        return value if isinstance(value, datetime) else None

    async def claim_delivery(
        self, delivery_id: str, *, attempts_before: int, now: datetime, lease_until: datetime
    ) -> bool:
        statement = (
            update(webhook_deliveries)
            .where(
                webhook_deliveries.c.id == delivery_id,
                webhook_deliveries.c.attempts == attempts_before,
                webhook_deliveries.c.next_attempt_at <= now,
                OPEN,
            )
            .values(next_attempt_at=lease_until)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def record_delivery_attempt(
        self,
        delivery_id: str,
        *,
        attempts_before: int,
        delivered: bool,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
    ) -> bool:
        now = self._clock.now()
        values: dict[str, Any] = {"attempts": attempts_before + 1, "last_error": error}
        if delivered:
            values["delivered_at"] = now
        elif next_attempt_at is None:
            values["gave_up_at"] = now
        else:
            values["next_attempt_at"] = next_attempt_at
        statement = (
            update(webhook_deliveries)
            .where(
                webhook_deliveries.c.id == delivery_id,
                webhook_deliveries.c.attempts == attempts_before,
                OPEN,
            )
            .values(**values)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def list_deliveries(self, ids: Sequence[str] | None = None) -> list[QueuedDelivery]:
        query = select(webhook_deliveries).order_by(
            webhook_deliveries.c.created_at, webhook_deliveries.c.id
        )
        if ids is not None:
            query = query.where(webhook_deliveries.c.id.in_(list(ids)))
        async with self._db.read() as conn:
            return [queued_delivery(row) for row in await conn.execute(query)]
