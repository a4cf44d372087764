"""Lookups: the reads every consumer shares (the things a request names).

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from clarion.domain.errors import NotFound
from clarion.domain.models import (
    Bundle,
    Session,
    Task,
)
from clarion.ports import Clock
from clarion.store.bundle_rows import (
    read_bundle,
)
from clarion.store.db.engine import Db
from clarion.store.db.row_conversion import to_session, to_task
from clarion.store.db.schema import tasks
from clarion.store.pending_actions import (
    CURRENT_OF_TASK,
    sessions_with_pending,
)
from clarion.store.tasks import (
    SESSIONS_OF_TASK,
    read_session,
)

log = logging.getLogger(__name__)


class SqlLookups:
    """`clarion.ports.store.lookups.Lookups` on SQL."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def get_task(self, task_id: str) -> Task:
        async with self._db.read_one() as conn:
            row = (await conn.execute(select(tasks).where(tasks.c.id == task_id))).first()
        if row is None:
            raise NotFound("task not found", task_id=task_id)
        return to_task(row)

    async def get_session(self, session_id: str) -> Session:
        async with self._db.read_one() as conn:
            return await read_session(conn, session_id)

    async def list_sessions(self, task_id: str) -> list[Session]:
        async with self._db.read_one() as conn:
            rows = await conn.execute(SESSIONS_OF_TASK, {"task_id": task_id})
            return [to_session(row) for row in rows]

    async def find_bundle(self, pending_id: str) -> Bundle | None:
        async with self._db.read_one() as conn:
            return await read_bundle(conn, pending_id)

    async def sessions_with_active_clarification(self, task_id: str) -> list[str]:
        async with self._db.read() as conn:
            ordered = [
                (str(s), str(t))
                for s, t in await conn.execute(CURRENT_OF_TASK, {"task_id": task_id})
                if t is not None
            ]
            clarifying = await sessions_with_pending(conn, dict(ordered))
        return [s for s, _ in ordered if s in clarifying]
