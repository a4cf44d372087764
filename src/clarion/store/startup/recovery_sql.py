"""What several startup steps share: the startup lock's key, the reservations still carrying
their dispatch marker, the statements that rewrite a turn's metadata and test whether claimed
rows are still their session's current question."""

from __future__ import annotations

from sqlalchemy import bindparam, select, update
from sqlalchemy.sql.elements import BindParameter

from clarion.domain.lifecycle import RESTORE_CLAIM, RETIRE_INTENT
from clarion.domain.models import MetaKey, Turn
from clarion.store.db.portable_sql import JsonText, UtcDateTime, flag
from clarion.store.db.predicates import TERMINAL_STATES
from clarion.store.db.row_conversion import to_turn
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx
from clarion.store.lifecycle_guards import guard

# Every step takes it, so two servers' startups (or a step run twice) never interleave.
STARTUP_LOCK = "clarion-startup-recovery"
LIVE_SESSION = task_sessions.c.state.not_in(TERMINAL_STATES)

MESSAGE_IDS: BindParameter[list[str]] = bindparam("message_ids", expanding=True)
# Claimed rows that are still a question of their session's current turn, in a live session:
# those RESTORE_CLAIM's guard matches.
STILL_CURRENT = select(messages).where(messages.c.id.in_(MESSAGE_IDS), guard(RESTORE_CLAIM))
# Every claimed row: RETIRE_INTENT's guard (any claim may be retired).
CLAIMED_ROWS = guard(RETIRE_INTENT)
SET_TURN_METADATA = (
    update(turns)
    .where(turns.c.id == bindparam("turn_id"))
    .values(
        metadata=bindparam("new_metadata", type_=JsonText),
        updated_at=bindparam("new_updated_at", type_=UtcDateTime),
    )
)


async def reserved_turns(conn: Tx) -> list[Turn]:
    """Successor reservations whose dispatch marker is still set, oldest first."""
    query = (
        select(turns)
        .where(flag(turns.c.metadata, MetaKey.PROMPT_DISPATCH_PENDING))
        .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
    )
    return [to_turn(row) for row in await conn.execute(query)]
