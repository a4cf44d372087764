"""Probes the store's contract tests use to look at rows directly; no port has them and no
service may call them.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging

from sqlalchemy import and_, select, update

from clarion.domain.lifecycle import DETACH
from clarion.domain.models import Turn
from clarion.ports import Clock
from clarion.store.db.engine import Db
from clarion.store.db.predicates import (
    authoritative,
    current_turns,
)
from clarion.store.db.row_conversion import to_turn
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.lifecycle_guards import guard
from clarion.store.pending_actions import chunks
from clarion.store.startup.recovery_sql import LIVE_SESSION
from clarion.store.startup.start_events import START_EVENT, without_marker
from clarion.store.successor_turns import (
    live_reservation,
)
from clarion.store.turn_rows import read_locked_turn

log = logging.getLogger(__name__)


class RowProbes:
    """Row probes for the store's contract tests."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def list_open_turns(self) -> list[Turn]:
        query = (
            select(turns)
            .where(and_(turns.c.completed_at.is_(None), authoritative(turns)))
            .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
        )
        async with self._db.read() as conn:
            return [to_turn(row) for row in await conn.execute(query)]

    async def find_live_reservation(self, session_id: str) -> Turn | None:
        async with self._db.read() as conn:
            return await live_reservation(conn, session_id)

    async def clear_start_marker(self, turn_id: str) -> bool:
        async with self._db.write() as conn:
            turn = await read_locked_turn(self._db, conn, turn_id)
            if turn is None or START_EVENT not in turn.metadata:
                return False
            await conn.execute(
                update(turns)
                .where(turns.c.id == turn_id)
                .values(
                    metadata=without_marker(turn.metadata),
                    updated_at=self._clock.now(),
                )
            )
        return True

    async def list_detachable_bundles(self) -> list[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        async with self._db.read() as conn:
            current = {
                str(sid): str(tid)
                for sid, tid in await conn.execute(current_turns(LIVE_SESSION))
                if tid is not None
            }
            for part in chunks(list(current.values())):
                query = (
                    select(messages.c.task_session_id, messages.c.turn_id, messages.c.pending_id)
                    .distinct()
                    # DETACH's guard; the pairs are checked below.
                    .where(guard(DETACH, current=messages.c.turn_id.in_(part)))
                )
                for session_id, turn_id, pending_id in await conn.execute(query):
                    if current.get(str(session_id)) == turn_id:
                        found.add((str(session_id), str(pending_id)))
        return sorted(found)
