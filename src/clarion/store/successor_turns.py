"""Detached-answer successor reservations: reserve, mark attempted, publish, roll back.

Store-internal. A reservation is a turn row carrying kandev's dispatch
keys; it becomes current-turn authority only once attempted or referenced by a message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import bindparam, delete, select

from clarion.domain.errors import Conflict, InvalidInput
from clarion.domain.flags import is_truthy as truthy
from clarion.domain.ids import new_id
from clarion.domain.lifecycle import DELIVER, Transition
from clarion.domain.models import Message, MetaKey, SessionState, Turn
from clarion.domain.turns import public_metadata
from clarion.ports import Clock, Written
from clarion.store.bundle_rows import rewrite, run_rows
from clarion.store.bundle_transitions import rows_of_bundle
from clarion.store.db.engine import Db
from clarion.store.db.fastpath import hot
from clarion.store.db.portable_sql import flag
from clarion.store.db.predicates import referenced
from clarion.store.db.row_conversion import to_turn
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.transactions import Tx
from clarion.store.tasks import move_with
from clarion.store.turn_rows import (
    insert_turn,
    read_locked_turn,
    read_session_and_current_turn,
    set_turn_metadata,
)

log = logging.getLogger(__name__)


def claimed_ids(message_ids: Sequence[str]) -> list[str]:
    ids = list(message_ids)
    if not ids or not all(isinstance(i, str) and i for i in ids):
        raise InvalidInput("claimed message ids must be non-empty strings", field="message_ids")
    return ids


# The session's newest turn still carrying the dispatch-pending key: its live reservation.
# What a published successor settles its claim with: the agent has the answer.
PUBLICATION_SETTLES = frozenset({DELIVER})
_LIVE_RESERVATION = hot(
    select(turns)
    .where(
        turns.c.task_session_id == bindparam("session_id"),
        flag(turns.c.metadata, MetaKey.PROMPT_DISPATCH_PENDING),
    )
    .order_by(turns.c.started_at.desc(), turns.c.created_at.desc(), turns.c.id.desc())
    .limit(1)
)


async def live_reservation(conn: Tx, session_id: str) -> Turn | None:
    row = (await conn.execute(_LIVE_RESERVATION, {"session_id": session_id})).first()
    return None if row is None else to_turn(row)


def is_reservation(turn: Turn | None) -> bool:
    return turn is not None and truthy(turn.metadata.get(MetaKey.PROMPT_DISPATCH_PENDING))


async def _finalize_claim(
    conn: Tx, pending_id: str, message_ids: Sequence[str], transition: Transition
) -> tuple[Message, ...]:
    """`transition` (DELIVER) on exactly the claimed rows still carrying the delivery intent;
    updated_at keeps the claim time. Returns the rows it changed."""
    if not message_ids:
        return ()
    rows = await run_rows(
        conn,
        rows_of_bundle(transition),
        {"message_ids": sorted(set(message_ids)), "pending_id": pending_id},
    )
    return await rewrite(conn, rows, transition)


async def reserve_successor(
    db: Db,
    clock: Clock,
    session_id: str,
    *,
    source_turn_id: str,
    pending_id: str,
    message_ids: Sequence[str],
) -> Turn:
    ids = claimed_ids(message_ids)
    now = clock.now()
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        session, current = await read_session_and_current_turn(conn, session_id)
        if await live_reservation(conn, session_id) is not None:
            raise Conflict("a successor reservation is already live", session_id=session_id)
        if session.state.is_terminal:
            raise Conflict("session has ended", session_id=session_id)
        if current != source_turn_id:
            # The question's turn was superseded after the claim: resuming it now would
            # hand the agent an answer to inert history.
            raise Conflict(
                "the clarification turn is no longer current",
                session_id=session_id,
                turn_id=source_turn_id,
            )
        turn = Turn(
            id=new_id(),
            session_id=session_id,
            task_id=session.task_id,
            started_at=now,
            completed_at=None,
            metadata={
                MetaKey.PROMPT_DISPATCH_PENDING: True,
                MetaKey.PROMPT_DISPATCH_TURN_ID: source_turn_id,
                MetaKey.PROMPT_DISPATCH_PENDING_ID: pending_id,
                MetaKey.PROMPT_DISPATCH_MESSAGE_IDS: ids,
            },
            created_at=now,
            updated_at=now,
        )
        await insert_turn(conn, turn)
    log.info(
        "successor reserved",
        extra={"session_id": session_id, "turn_id": turn.id, "pending_id": pending_id},
    )
    return turn


async def mark_attempted(db: Db, clock: Clock, turn_id: str) -> bool:
    async with db.write() as conn:
        turn = await read_locked_turn(db, conn, turn_id)
        if turn is None or not is_reservation(turn):
            return False
        attempted = {**turn.metadata, MetaKey.PROMPT_DISPATCH_ATTEMPTED: True}
        await set_turn_metadata(conn, turn_id, attempted, now=clock.now())
    log.info("successor dispatch attempted", extra={"turn_id": turn_id})
    return True


async def publish_successor(
    db: Db,
    clock: Clock,
    turn_id: str,
    transition: Transition,
    *,
    pending_id: str,
    message_ids: Sequence[str],
    session_state: SessionState | None = None,
) -> Written | None:
    if transition not in PUBLICATION_SETTLES:
        raise ValueError(f"{transition} does not settle a published successor's claim")
    async with db.write() as conn:
        turn = await read_locked_turn(db, conn, turn_id)
        if turn is None or not is_reservation(turn):
            return None
        if turn.metadata.get(MetaKey.PROMPT_DISPATCH_PENDING_ID) != pending_id:
            return None
        await set_turn_metadata(conn, turn_id, public_metadata(turn.metadata), now=clock.now())
        finalized = await _finalize_claim(conn, pending_id, message_ids, transition)
        session = await move_with(conn, turn.session_id, session_state, clock.now())
    log.info("successor published", extra={"turn_id": turn_id, "pending_id": pending_id})
    return Written(finalized, session)


async def rollback_successor(db: Db, turn_id: str) -> bool:
    async with db.write() as conn:
        turn = await read_locked_turn(db, conn, turn_id)
        if turn is None or not is_reservation(turn):
            return False
        result = await conn.execute(
            delete(turns).where(turns.c.id == turn_id, ~referenced(turns.c.id))
        )
        deleted = result.rowcount == 1
    log.info("successor rollback", extra={"turn_id": turn_id, "deleted": deleted})
    return deleted
