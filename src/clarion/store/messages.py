"""Transcript messages. Used by the port implementations beside it (store-internal)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from clarion.domain.errors import Conflict, NotFound
from clarion.domain.flags import is_truthy as truthy
from clarion.domain.ids import new_id
from clarion.domain.models import AuthorType, Message, MessageType, MetaKey
from clarion.ports import NewMessage
from clarion.store.db.fastpath import hot
from clarion.store.db.row_conversion import to_message
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.transactions import Tx
from clarion.store.tasks import read_session
from clarion.store.turn_rows import read_session_and_current_turn, read_turn

_MESSAGE_BY_ID = select(messages).where(messages.c.id == bindparam("message_id"))
_INSERT_MESSAGE = hot(insert(messages))


async def read_message(conn: Tx, message_id: str) -> Message | None:
    row = (await conn.execute(_MESSAGE_BY_ID, {"message_id": message_id})).first()
    return None if row is None else to_message(row)


async def insert_message(
    conn: Tx, new: NewMessage, *, task_id: str, turn_id: str, now: datetime
) -> Message:
    """Insert one row into a turn the caller has already resolved (session lock held)."""
    metadata = dict(new.metadata)
    pending_id = metadata.get(MetaKey.PENDING_ID)
    message = Message(
        id=new_id(),
        session_id=new.session_id,
        task_id=task_id,
        turn_id=turn_id,
        author_type=AuthorType(new.author_type),
        type=MessageType(new.type),
        content=new.content,
        metadata=metadata,
        created_at=now,
        updated_at=now,
        requests_input=new.requests_input,
    )
    values: dict[str, Any] = {
        "id": message.id,
        "task_session_id": message.session_id,
        "task_id": task_id,
        "turn_id": turn_id,
        "author_type": message.author_type.value,
        "author_id": None,
        "content": message.content,
        "requests_input": message.requests_input,
        "type": message.type.value,
        # Mirrors metadata.pending_id so bundle lookups are index lookups (see schema).
        "pending_id": pending_id if isinstance(pending_id, str) and pending_id else None,
        "metadata": metadata,
        "created_at": now,
        "updated_at": now,
    }
    await conn.execute(_INSERT_MESSAGE, values)
    return message


async def resolve_turn(conn: Tx, session_id: str, turn_id: str | None) -> tuple[str, str]:
    """(task_id, turn_id) for a new row: the given turn (which must be the session's) or the
    current turn."""
    if turn_id is None:
        session, current = await read_session_and_current_turn(conn, session_id)
        if current is None:
            raise Conflict("session has no current turn", session_id=session_id)
        return session.task_id, current
    session = await read_session(conn, session_id)
    turn = await read_turn(conn, turn_id)
    if turn is None or turn.session_id != session_id:
        raise NotFound("turn not found", session_id=session_id, turn_id=turn_id)
    return session.task_id, turn_id


async def keep_reservation_evidence(conn: Tx, turn_id: str, now: datetime) -> None:
    """A message in an unpublished reservation is evidence its prompt may have run, and that
    evidence made the reservation authoritative. Deleting the message must not move ownership
    back, so the evidence is kept as the attempt marker it stands for."""
    turn = await read_turn(conn, turn_id)
    if turn is None or not truthy(turn.metadata.get(MetaKey.PROMPT_DISPATCH_PENDING)):
        return
    if truthy(turn.metadata.get(MetaKey.PROMPT_DISPATCH_ATTEMPTED)):
        return
    await conn.execute(
        update(turns)
        .where(turns.c.id == turn_id)
        .values(metadata={**turn.metadata, MetaKey.PROMPT_DISPATCH_ATTEMPTED: True}, updated_at=now)
    )
