"""Permission-request rows: the pending write, the one decision that wins, and the end-of-call
settlements. Used by the port implementations beside it (store-internal).

Every change of a row's status happens under its session's write lock and only from
`pending`, so at most one decision, cancellation or expiry ever applies to a request.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import bindparam, select, update

from clarion.domain.models import Message, MessageType
from clarion.domain.notification_events import NotificationFact
from clarion.domain.permissions import PermissionKey, PermissionStatus, status_of
from clarion.store.db.row_conversion import to_message
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.transactions import Tx

log = logging.getLogger(__name__)

_TYPE = MessageType.PERMISSION_REQUEST.value
_SET_METADATA = (
    update(messages)
    .where(messages.c.id == bindparam("message_id"))
    .values(metadata=bindparam("metadata"), updated_at=bindparam("now"))
    .returning(*messages.c)
)
OF_SESSION = select(messages).where(
    messages.c.task_session_id == bindparam("session_id"), messages.c.type == _TYPE
)
# A request can only be pending while the agent call that made it runs, that is in an open
# turn (a turn's end settles its requests first); found through the turn index.
IN_OPEN_TURNS = select(messages).where(
    messages.c.type == _TYPE,
    messages.c.turn_id.in_(select(turns.c.id).where(turns.c.completed_at.is_(None))),
)


async def settle_requests(
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


def permission_fact(event: str, row: Message, title: str, detail: str = "") -> NotificationFact:
    meta = row.metadata
    return NotificationFact(
        event,
        row.task_id,
        title,
        row.session_id,
        message_id=row.id,
        tool_call=dict(meta.get(PermissionKey.TOOL_CALL) or {}),
        detail=detail,
    )
