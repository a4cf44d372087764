"""PermissionStore: permission requests (asked, decided once, settled) and agent failures in
the transcript.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert, update

from clarion.domain.errors import NotFound
from clarion.domain.ids import new_id
from clarion.domain.models import Message, MessageType, MetaKey, Session, SessionState, Turn
from clarion.domain.notification_events import (
    PERMISSION_DECIDED,
    PERMISSION_REQUESTED,
    SESSION_FAILED,
    NotificationFact,
)
from clarion.domain.permissions import PermissionKey, PermissionStatus, status_of
from clarion.ports import Clock, NewMessage, Written
from clarion.store.db.engine import Db
from clarion.store.db.row_conversion import to_message
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.failures import SESSION_ERROR_KEY
from clarion.store.messages import insert_message, read_message, resolve_turn
from clarion.store.outbox import OutboxWriter
from clarion.store.permission_rows import (
    _SET_METADATA,
    OF_SESSION,
    permission_fact,
    settle_requests,
)
from clarion.store.tasks import NON_TERMINAL, move_session, move_with, read_session
from clarion.store.turn_rows import read_session_and_current_turn

log = logging.getLogger(__name__)


class SqlPermissions:
    """`clarion.ports.store.permissions.PermissionStore` on SQL (`Lookups`: `SqlLookups`)."""

    def __init__(self, db: Db, clock: Clock, outbox: OutboxWriter) -> None:
        self._db = db
        self._clock = clock
        self._outbox = outbox

    async def add_permission_request(
        self, new: NewMessage, *, session_state: SessionState | None = None
    ) -> Written:
        """Insert one permission_request row (in `new.turn_id` or the current turn); with
        `session_state`, also move a non-terminal session there, in the same commit."""
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, new.session_id)
            task_id, turn_id = await resolve_turn(conn, new.session_id, new.turn_id)
            row = await insert_message(conn, new, task_id=task_id, turn_id=turn_id, now=now)
            session = await move_with(conn, new.session_id, session_state, now)
            if status_of(row) is PermissionStatus.PENDING:
                await self._outbox.enqueue(
                    conn,
                    PERMISSION_REQUESTED,
                    task_id,
                    lambda t: permission_fact(PERMISSION_REQUESTED, row, t),
                    now,
                )
        return Written((row,), session)

    async def decide_permission(
        self,
        message_id: str,
        *,
        status: PermissionStatus,
        decision: Mapping[str, Any],
        session_state: SessionState | None = None,
    ) -> tuple[bool, Message, Written | None]:
        """Record a decision on a pending request whose turn is still its session's current
        turn and whose session has not ended. Returns (applied, the row as it now stands,
        what the write left when it applied); with `session_state`, a session waiting for
        input moves there in the same commit."""
        now = self._clock.now()
        async with self._db.write() as conn:
            found = await read_message(conn, message_id)
            if found is None or found.type is not MessageType.PERMISSION_REQUEST:
                raise NotFound("permission request not found", message_id=message_id)
            await self._db.lock_session(conn, found.session_id)
            row = await read_message(conn, message_id)
            assert row is not None  # rows are deleted only under the same lock
            session, current = await read_session_and_current_turn(conn, row.session_id)
            if (
                status_of(row) is not PermissionStatus.PENDING
                or session.state.is_terminal
                or current != row.turn_id
            ):
                return False, row, None
            meta = {
                **row.metadata,
                PermissionKey.STATUS: str(status),
                PermissionKey.DECISION: dict(decision),
                PermissionKey.DECIDED_BY: decision.get("decided_by"),
                PermissionKey.DECIDED_AT: now.isoformat(),
            }
            result = await conn.execute(
                _SET_METADATA, {"message_id": message_id, "metadata": meta, "now": now}
            )
            decided = to_message(result.one())
            await self._outbox.enqueue(
                conn,
                PERMISSION_DECIDED,
                decided.task_id,
                lambda t: permission_fact(PERMISSION_DECIDED, decided, t, detail=str(status)),
                now,
            )
            moved = None
            if session_state is not None:
                moved = await move_session(
                    conn, row.session_id, session_state, [SessionState.WAITING_FOR_INPUT], now
                )
        log.info(
            "permission decided",
            extra={
                "message_id": message_id,
                "session_id": decided.session_id,
                "turn_id": decided.turn_id,
                "status": str(status),
            },
        )
        return True, decided, Written((decided,), moved)

    async def settle_permissions(
        self, session_id: str, *, status: PermissionStatus, reason: str
    ) -> tuple[Message, ...]:
        """Every pending request of the session -> `status` with `metadata.reason`. Returns
        only the rows it changed, so a repeat returns ()."""
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            rows = [
                to_message(r) for r in await conn.execute(OF_SESSION, {"session_id": session_id})
            ]
            return await settle_requests(conn, rows, status, reason, now)

    async def record_agent_failure(
        self,
        new: NewMessage,
        *,
        error: str,
        session_state: SessionState | None = None,
        turn_metadata: dict[str, object] | None = None,
    ) -> tuple[Message, Session, Turn | None]:
        """Write the error row and set the session's `error` (and, with `session_state`, move a
        non-terminal session there). With `turn_metadata` the row goes into a new, completed
        lifecycle turn carrying that metadata (a failure outside any prompt); otherwise into
        `new.turn_id` or the current turn. Returns the row, the session and the new turn."""
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, new.session_id)
            session = await read_session(conn, new.session_id)
            turn: Turn | None = None
            if turn_metadata is not None:
                turn = Turn(
                    id=new_id(),
                    session_id=session.id,
                    task_id=session.task_id,
                    started_at=now,
                    completed_at=now,
                    metadata={**turn_metadata, MetaKey.LIFECYCLE_ONLY: True},
                    created_at=now,
                    updated_at=now,
                )
                await conn.execute(
                    insert(turns).values(
                        id=turn.id,
                        task_session_id=turn.session_id,
                        task_id=turn.task_id,
                        started_at=now,
                        completed_at=now,
                        metadata=dict(turn.metadata),
                        created_at=now,
                        updated_at=now,
                    )
                )
                task_id, turn_id = session.task_id, turn.id
            else:
                task_id, turn_id = await resolve_turn(conn, new.session_id, new.turn_id)
            row = await insert_message(conn, new, task_id=task_id, turn_id=turn_id, now=now)
            values: dict[str, object] = {
                "metadata": {**session.metadata, SESSION_ERROR_KEY: error},
                "updated_at": now,
            }
            if session_state is not None and not session.state.is_terminal:
                values["state"] = session_state.value
            await conn.execute(
                update(task_sessions)
                .where(
                    task_sessions.c.id == session.id,
                    task_sessions.c.state.in_([s.value for s in NON_TERMINAL]),
                )
                .values(**values)
            )
            after = await read_session(conn, session.id)
            if after.state is SessionState.FAILED and session.state is not SessionState.FAILED:
                await self._outbox.enqueue(
                    conn,
                    SESSION_FAILED,
                    session.task_id,
                    lambda title: NotificationFact(
                        SESSION_FAILED,
                        session.task_id,
                        title,
                        session.id,
                        message_id=row.id,
                        detail=error,
                    ),
                    now,
                )
        log.info(
            "agent failure recorded",
            extra={
                "session_id": session.id,
                "message_id": row.id,
                "turn_id": turn_id,
                "state": str(after.state),
            },
        )
        return row, after, turn
