"""A review's turn: reserved like a detached answer's successor, refused while the session is
busy.

The reservation carries the same dispatch keys as a successor's (store/successor_turns.py), so
marking it attempted, publishing it, rolling it back and reconciling it at startup are the
successor's own statements: its "claim" names a key that no message carries, so publication
and startup settle no rows, and startup keeps an attempted reservation (the agent may have the
review) and deletes one never attempted. The busy check runs inside the reserving
transaction, under the session's write lock, so of two racing reviews at most one reserves.
Store-internal.
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from clarion.domain.errors import Conflict, SessionBusy
from clarion.domain.models import MetaKey, Turn
from clarion.domain.reviews import review_claim_key
from clarion.ports import Clock
from clarion.store.db.engine import Db
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.successor_turns import live_reservation
from clarion.store.turn_rows import insert_turn, read_session_and_current_turn

log = logging.getLogger(__name__)

REVIEW_KEY = "review"  # turn metadata: this turn carries a person's review


async def reserve_review(db: Db, clock: Clock, session_id: str, *, turn_id: str) -> Turn:
    now = clock.now()
    key = review_claim_key(turn_id)
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        session, current = await read_session_and_current_turn(conn, session_id)
        if session.state.is_terminal:
            raise Conflict("the session has ended", session_id=session_id)
        if await live_reservation(conn, session_id) is not None:
            raise SessionBusy("a prompt is being handed to the agent", session_id=session_id)
        open_turn = (
            await conn.execute(
                select(turns.c.id)
                .where(turns.c.task_session_id == session_id, turns.c.completed_at.is_(None))
                .limit(1)
            )
        ).first()
        if open_turn is not None:
            raise SessionBusy(
                "the session has a turn running", session_id=session_id, turn_id=open_turn.id
            )
        turn = Turn(
            id=turn_id,
            session_id=session_id,
            task_id=session.task_id,
            started_at=now,
            completed_at=None,
            metadata={
                REVIEW_KEY: True,
                MetaKey.PROMPT_DISPATCH_PENDING: True,
                MetaKey.PROMPT_DISPATCH_TURN_ID: current or key,
                MetaKey.PROMPT_DISPATCH_PENDING_ID: key,
                MetaKey.PROMPT_DISPATCH_MESSAGE_IDS: [key],
            },
            created_at=now,
            updated_at=now,
        )
        await insert_turn(conn, turn)
    log.info("review turn reserved", extra={"session_id": session_id, "turn_id": turn_id})
    return turn


class SqlReviews:
    """`clarion.ports.store.reviews.ReviewStore` on SQL."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def reserve_review(self, session_id: str, *, turn_id: str) -> Turn:
        return await reserve_review(self._db, self._clock, session_id, turn_id=turn_id)
