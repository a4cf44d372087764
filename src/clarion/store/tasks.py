"""Workspaces, tasks and sessions. Used by the port implementations beside it (store-internal)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import bindparam, select, update

from clarion.domain.errors import NotFound
from clarion.domain.models import (
    TERMINAL_SESSION_STATES,
    Session,
    SessionState,
)
from clarion.store.db.fastpath import hot
from clarion.store.db.row_conversion import to_session
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx

NON_TERMINAL = tuple(s for s in SessionState if s not in TERMINAL_SESSION_STATES)


_SESSION_BY_ID = hot(select(task_sessions).where(task_sessions.c.id == bindparam("session_id")))
SESSIONS_OF_TASK = hot(
    select(task_sessions)
    .where(task_sessions.c.task_id == bindparam("task_id"))
    .order_by(task_sessions.c.created_at, task_sessions.c.id)
)


async def read_session(conn: Tx, session_id: str) -> Session:
    row = (await conn.execute(_SESSION_BY_ID, {"session_id": session_id})).first()
    if row is None:
        raise NotFound("session not found", session_id=session_id)
    return to_session(row)


_MOVE_SESSION = hot(
    update(task_sessions)
    .where(
        task_sessions.c.id == bindparam("session_id"),
        task_sessions.c.state.in_(bindparam("allowed", expanding=True)),
    )
    .values(state=bindparam("to"), updated_at=bindparam("now"))
    .returning(*task_sessions.c)
)


async def move_session(
    conn: Tx,
    session_id: str,
    to: SessionState,
    allowed: Sequence[SessionState],
    now: datetime,
) -> Session | None:
    """Move the session to `to` if its state is in `allowed` and not `to` already, and return
    it as it now stands: None when it is missing or could not move (already being in `to`,
    with `to` allowed, counts as moved). The UPDATE locks the row it changes (what
    `lock_session` would take) and returns it, so a move is one statement; one that matches
    nothing writes nothing (no commit on SQLite, no transaction id on PostgreSQL), and only
    then is the session read."""
    sources = [s.value for s in allowed if s is not to]
    if sources:
        moved = await conn.execute(
            _MOVE_SESSION,
            {"session_id": session_id, "allowed": sources, "to": to.value, "now": now},
        )
        row = moved.first()
        if row is not None:
            return to_session(row)
    row = (await conn.execute(_SESSION_BY_ID, {"session_id": session_id})).first()
    if row is None or not (row.state == to.value and to in allowed):
        return None
    return to_session(row)


async def move_with(
    conn: Tx, session_id: str, to: SessionState | None, now: datetime
) -> Session | None:
    """For writes that may also move a non-terminal session in their transaction: the
    session as `move_session` leaves it, or None when there was nothing to move to."""
    if to is None:
        return None
    return await move_session(conn, session_id, to, NON_TERMINAL, now)
