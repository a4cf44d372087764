"""Turns: creation, completion, the current turn and visible history.

Used by the port implementations beside it (store-internal).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from clarion.domain.errors import NotFound
from clarion.domain.models import DISPATCH_KEYS, Session, Turn
from clarion.store.db.engine import Db
from clarion.store.db.fastpath import hot
from clarion.store.db.portable_sql import JsonText, UtcDateTime
from clarion.store.db.predicates import current_turn_id
from clarion.store.db.row_conversion import to_session, to_turn
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx

log = logging.getLogger(__name__)


# Built once: composing the current-turn expression costs more than running it.
_TURN_BY_ID = hot(select(turns).where(turns.c.id == bindparam("turn_id")))
_CURRENT_TURN = hot(select(turns).where(turns.c.id == current_turn_id(bindparam("session_id"))))
_SESSION_WITH_CURRENT_TURN = hot(
    select(task_sessions, current_turn_id(task_sessions.c.id).label("current_turn_id")).where(
        task_sessions.c.id == bindparam("session_id")
    )
)

_INSERT_TURN = hot(insert(turns))
# A turn's metadata rewritten under its session's lock (the caller read it under that lock).
_SET_TURN_METADATA = hot(
    update(turns)
    .where(turns.c.id == bindparam("turn_id"))
    .values(
        metadata=bindparam("new_metadata", type_=JsonText),
        updated_at=bindparam("new_updated_at", type_=UtcDateTime),
    )
)
_COMPLETE_TURN = hot(
    _SET_TURN_METADATA.where(turns.c.completed_at.is_(None)).values(
        completed_at=bindparam("new_completed_at", type_=UtcDateTime)
    )
)


async def insert_turn(conn: Tx, turn: Turn) -> None:
    await conn.execute(_INSERT_TURN, turn_values(turn))


async def set_turn_metadata(
    conn: Tx, turn_id: str, metadata: Mapping[str, Any], *, now: datetime
) -> None:
    params = {"turn_id": turn_id, "new_metadata": dict(metadata), "new_updated_at": now}
    await conn.execute(_SET_TURN_METADATA, params)


async def complete_open_turn(
    conn: Tx, turn_id: str, metadata: Mapping[str, Any], *, now: datetime
) -> None:
    """Complete the turn, if it is still open, with `metadata` at `now`."""
    params = {
        "turn_id": turn_id,
        "new_metadata": dict(metadata),
        "new_updated_at": now,
        "new_completed_at": now,
    }
    await conn.execute(_COMPLETE_TURN, params)


async def read_turn(conn: Tx, turn_id: str) -> Turn | None:
    row = (await conn.execute(_TURN_BY_ID, {"turn_id": turn_id})).first()
    return None if row is None else to_turn(row)


async def read_locked_turn(db: Db, conn: Tx, turn_id: str) -> Turn | None:
    """Turn `turn_id` read under its session's lock (`Db.lock_session`), for a write to it:
    on PostgreSQL the lock found by the turn in one statement, then the read, which sees
    whatever the lock's last holder committed; on SQLite the write transaction already holds
    the only lock, and this is the read alone. None when there is no such turn."""
    if db.is_postgres and await db.lock_turn_session(conn, turn_id) is None:
        return None
    return await read_turn(conn, turn_id)


async def read_current_turn(conn: Tx, session_id: str) -> Turn | None:
    """The session's current turn, found and read in one statement."""
    row = (await conn.execute(_CURRENT_TURN, {"session_id": session_id})).first()
    return None if row is None else to_turn(row)


async def read_session_and_current_turn(conn: Tx, session_id: str) -> tuple[Session, str | None]:
    """The session (NotFound if missing) and its current turn id, in one statement."""
    row = (await conn.execute(_SESSION_WITH_CURRENT_TURN, {"session_id": session_id})).first()
    if row is None:
        raise NotFound("session not found", session_id=session_id)
    current = row.current_turn_id
    return to_session(row), None if current is None else str(current)


def strip_private(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k not in DISPATCH_KEYS}


def public(turn: Turn) -> Turn:
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


def turn_values(turn: Turn) -> dict[str, Any]:
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
