"""Agents Clarion stopped while their session was idle: the durable record of the stop.

Store-internal. The record (`agent_stopped` in the session's metadata)
is what tells every reader, on any replica, that the session's agent is not running because
it sat idle and will start on the next prompt. Writing it is the stop's guard: it applies only
to a session that is idle by its rows (IDLE or WAITING_FOR_INPUT, no open turn), under the
session lock, so a prompt whose turn committed first makes the stop not apply.
"""

from __future__ import annotations

from sqlalchemy import bindparam, exists, select, update

from clarion.domain.agent_process import AGENT_STOPPED, IDLE_REASON, IDLE_STATES
from clarion.domain.models import Session
from clarion.ports import Clock
from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import JsonText
from clarion.store.db.predicates import authoritative
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.tasks import read_session

_OPEN_TURN = exists(
    select(turns.c.id).where(
        turns.c.task_session_id == bindparam("session_id"),
        turns.c.completed_at.is_(None),
        authoritative(turns),
    )
)
_HAS_OPEN_TURN = select(_OPEN_TURN)
_SET_METADATA = (
    update(task_sessions)
    .where(task_sessions.c.id == bindparam("session_id"))
    .values(metadata=bindparam("new_metadata", type_=JsonText), updated_at=bindparam("updated_at"))
)


async def mark_agent_stopped(db: Db, clock: Clock, session_id: str) -> Session | None:
    """Record that the session's agent is stopped for idleness, if the session is idle by
    its rows. Returns the session as it now stands, or None when it did not apply."""
    now = clock.now()
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        session = await read_session(conn, session_id)
        if session.state not in IDLE_STATES:
            return None
        if (await conn.execute(_HAS_OPEN_TURN, {"session_id": session_id})).scalar():
            return None
        mark = {"reason": IDLE_REASON, "at": now.isoformat()}
        await conn.execute(
            _SET_METADATA,
            {
                "session_id": session_id,
                "new_metadata": {**session.metadata, AGENT_STOPPED: mark},
                "updated_at": now,
            },
        )
        return await read_session(conn, session_id)


async def clear_agent_stopped(db: Db, clock: Clock, session_id: str) -> bool:
    """The agent runs again: drop the record of its stop. False when there was none."""
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        session = await read_session(conn, session_id)
        if AGENT_STOPPED not in session.metadata:
            return False
        rest = {k: v for k, v in session.metadata.items() if k != AGENT_STOPPED}
        await conn.execute(
            _SET_METADATA,
            {"session_id": session_id, "new_metadata": rest, "updated_at": clock.now()},
        )
        return True
