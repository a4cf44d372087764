"""Turns: creation, completion, the current turn and visible history.

Imported only by the SqlStore facade and sibling store modules.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import and_, bindparam, insert, not_, or_, select, update

from clarion.domain.errors import NotFound
from clarion.domain.ids import new_id
from clarion.domain.models import DISPATCH_KEYS, MetaKey, Session, Turn
from clarion.store.db.fastpath import hot
from clarion.store.db.portable_sql import flag
from clarion.store.db.predicates import authoritative, current_turn_id, referenced
from clarion.store.db.row_conversion import StoreBase, to_session, to_turn
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx
from clarion.store.tasks import read_session

log = logging.getLogger(__name__)


# Built once: composing the current-turn expression costs more than running it.
_TURN_BY_ID = hot(select(turns).where(turns.c.id == bindparam("turn_id")))
_CURRENT_TURN_ID = select(current_turn_id(bindparam("session_id")))
_SESSION_WITH_CURRENT_TURN = hot(
    select(task_sessions, current_turn_id(task_sessions.c.id).label("current_turn_id")).where(
        task_sessions.c.id == bindparam("session_id")
    )
)


async def read_turn(conn: Tx, turn_id: str) -> Turn | None:
    row = (await conn.execute(_TURN_BY_ID, {"turn_id": turn_id})).first()
    return None if row is None else to_turn(row)


async def read_current_turn_id(conn: Tx, session_id: str) -> str | None:
    value = (await conn.execute(_CURRENT_TURN_ID, {"session_id": session_id})).scalar()
    return None if value is None else str(value)


async def read_session_and_current_turn(conn: Tx, session_id: str) -> tuple[Session, str | None]:
    """The session (NotFound if missing) and its current turn id, in one statement."""
    row = (await conn.execute(_SESSION_WITH_CURRENT_TURN, {"session_id": session_id})).first()
    if row is None:
        raise NotFound("session not found", session_id=session_id)
    current = row.current_turn_id
    return to_session(row), None if current is None else str(current)


def strip_private(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k not in DISPATCH_KEYS}


class TurnQueries(StoreBase):
    async def create_turn(
        self,
        session_id: str,
        *,
        lifecycle_only: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> Turn:
        meta = dict(metadata or {})
        if lifecycle_only:
            meta[MetaKey.LIFECYCLE_ONLY] = True
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            session = await read_session(conn, session_id)
            turn = Turn(
                id=new_id(),
                session_id=session_id,
                task_id=session.task_id,
                started_at=now,
                completed_at=None,
                metadata=meta,
                created_at=now,
                updated_at=now,
            )
            await conn.execute(insert(turns).values(_turn_values(turn)))
        log.info(
            "turn created",
            extra={"session_id": session_id, "turn_id": turn.id, "lifecycle_only": lifecycle_only},
        )
        return turn

    async def complete_turn(
        self, turn_id: str, *, metadata_patch: Mapping[str, Any] | None = None
    ) -> bool:
        async with self._db.write() as conn:
            turn = await read_turn(conn, turn_id)
            if turn is None:
                return False
            await self._db.lock_session(conn, turn.session_id)
            turn = await read_turn(conn, turn_id)
            if turn is None or turn.completed_at is not None:
                return False
            now = self._clock.now()
            await conn.execute(
                update(turns)
                .where(turns.c.id == turn_id, turns.c.completed_at.is_(None))
                .values(
                    completed_at=now,
                    updated_at=now,
                    metadata={**turn.metadata, **(metadata_patch or {})},
                )
            )
            return True

    async def get_turn(self, turn_id: str) -> Turn:
        async with self._db.read_one() as conn:
            turn = await read_turn(conn, turn_id)
        if turn is None:
            raise NotFound("turn not found", turn_id=turn_id)
        return turn

    async def session_with_current_turn(self, session_id: str) -> tuple[Session, str | None]:
        async with self._db.read_one() as conn:
            return await read_session_and_current_turn(conn, session_id)

    async def find_current_turn(self, session_id: str) -> Turn | None:
        async with self._db.read() as conn:
            turn_id = await read_current_turn_id(conn, session_id)
            return None if turn_id is None else await read_turn(conn, turn_id)

    async def list_visible_turns(self, session_id: str) -> list[Turn]:
        # An unpublished reservation stays hidden even once attempted; only a message in it
        # (durable evidence that the prompt may have run) makes it history.
        visible = or_(
            not_(flag(turns.c.metadata, MetaKey.PROMPT_DISPATCH_PENDING)), referenced(turns.c.id)
        )
        query = (
            select(turns)
            .where(turns.c.task_session_id == session_id, visible)
            .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
        )
        async with self._db.read() as conn:
            rows = [to_turn(row) for row in await conn.execute(query)]
        return [_public(turn) for turn in rows]

    async def list_open_turns(self) -> list[Turn]:
        query = (
            select(turns)
            .where(and_(turns.c.completed_at.is_(None), authoritative(turns)))
            .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
        )
        async with self._db.read() as conn:
            return [to_turn(row) for row in await conn.execute(query)]


def _public(turn: Turn) -> Turn:
    return Turn(
        id=turn.id,
        session_id=turn.session_id,
        task_id=turn.task_id,
        started_at=turn.started_at,
        completed_at=turn.completed_at,
        metadata=strip_private(turn.metadata),
        created_at=turn.created_at,
        updated_at=turn.updated_at,
    )


def _turn_values(turn: Turn) -> dict[str, Any]:
    return {
        "id": turn.id,
        "task_session_id": turn.session_id,
        "task_id": turn.task_id,
        "started_at": turn.started_at,
        "completed_at": turn.completed_at,
        "metadata": dict(turn.metadata),
        "created_at": turn.created_at,
        "updated_at": turn.updated_at,
    }
