"""Permission-request rows: the pending write, the one decision that wins, and the end-of-call
settlements. Imported only by the SqlStore facade.

Every change of a row's status happens under its session's write lock and only from
`pending`, so at most one decision, cancellation or expiry ever applies to a request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update

from clarion.domain.errors import NotFound
from clarion.domain.models import Message, MessageType, SessionState
from clarion.domain.permissions import PermissionKey, PermissionStatus, status_of
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.domain.webhooks import PERMISSION_DECIDED, PERMISSION_REQUESTED, WebhookFact
from clarion.ports import NewMessage, Written
from clarion.store.db.row_conversion import to_message
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.transactions import Tx
from clarion.store.messages import insert_message, read_message, resolve_turn
from clarion.store.outbox import OutboxQueries
from clarion.store.tasks import move_session, move_with
from clarion.store.turns import read_session_and_current_turn

log = logging.getLogger(__name__)

_TYPE = MessageType.PERMISSION_REQUEST.value
_SET_METADATA = (
    update(messages)
    .where(messages.c.id == bindparam("message_id"))
    .values(metadata=bindparam("metadata"), updated_at=bindparam("now"))
    .returning(*messages.c)
)
_OF_SESSION = select(messages).where(
    messages.c.task_session_id == bindparam("session_id"), messages.c.type == _TYPE
)
# A request can only be pending while the agent call that made it runs, that is in an open
# turn (a turn's end settles its requests first); found through the turn index.
_IN_OPEN_TURNS = select(messages).where(
    messages.c.type == _TYPE,
    messages.c.turn_id.in_(select(turns.c.id).where(turns.c.completed_at.is_(None))),
)


async def _settle(
    conn: Tx, rows: list[Message], status: PermissionStatus, reason: str, now: datetime
) -> tuple[Message, ...]:
    changed: list[Message] = []
    for row in rows:
        if status_of(row) is not PermissionStatus.PENDING:
            continue
        meta = {
            **row.metadata,
            PermissionKey.STATUS: str(status),
            PermissionKey.REASON: reason,
            PermissionKey.DECIDED_AT: now.isoformat(),
        }
        result = await conn.execute(
            _SET_METADATA, {"message_id": row.id, "metadata": meta, "now": now}
        )
        changed.append(to_message(result.one()))
    return tuple(changed)


def _fact(event: str, row: Message, title: str, detail: str = "") -> WebhookFact:
    meta = row.metadata
    return WebhookFact(
        event,
        row.task_id,
        title,
        row.session_id,
        message_id=row.id,
        tool_call=dict(meta.get(PermissionKey.TOOL_CALL) or {}),
        detail=detail,
    )


class PermissionQueries(OutboxQueries):
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
                await self._enqueue(
                    conn,
                    PERMISSION_REQUESTED,
                    task_id,
                    lambda t: _fact(PERMISSION_REQUESTED, row, t),
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
            await self._enqueue(
                conn,
                PERMISSION_DECIDED,
                decided.task_id,
                lambda t: _fact(PERMISSION_DECIDED, decided, t, detail=str(status)),
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
                to_message(r) for r in await conn.execute(_OF_SESSION, {"session_id": session_id})
            ]
            return await _settle(conn, rows, status, reason, now)

    async def expire_stale_permissions(
        self, *, reason: str, scope: SessionScope = EVERY_SESSION
    ) -> tuple[Message, ...]:
        """Startup: every request a previous process left pending -> expired."""
        now = self._clock.now()
        async with self._db.write() as conn:
            rows = [to_message(r) for r in await conn.execute(_IN_OPEN_TURNS)]
            pending = [
                r
                for r in scope.pick(rows, lambda r: r.session_id)
                if status_of(r) is PermissionStatus.PENDING
            ]
            await self._db.lock_sessions(conn, [r.session_id for r in pending])
            return await _settle(conn, pending, PermissionStatus.EXPIRED, reason, now)
