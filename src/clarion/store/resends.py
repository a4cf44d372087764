"""What startup reads to find answers the agent may not have read; agents' context.

Store-internal. A live answer whose turn a restart interrupted before the agent wrote anything
after it reads ambiguous: the confirmation commits before the tool result is written back, so
the agent may never have read it (startup's MARK_UNREAD, store/recovery.py, with the statements
below). The resend's own transitions (MARK_UNREAD of one bundle, CLAIM_RESEND, RELEASE_RESEND,
FINISH_RESEND) are applied as every bundle transition is (store/bundle_transitions.py), on the
rows their guards match: at most one resend in flight, released at startup.
"""

from __future__ import annotations

import logging

from sqlalchemy import bindparam, select, update

from clarion.domain.models import MetaKey
from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import JsonText, UtcDateTime
from clarion.store.db.predicates import authoritative
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.tasks import read_session

log = logging.getLogger(__name__)

RECENT = (
    select(messages)
    .where(messages.c.task_session_id == bindparam("session_id"))
    .order_by(messages.c.created_at.desc(), messages.c.id.desc())
    .limit(bindparam("limit"))
)
_SET_SESSION_METADATA = (
    update(task_sessions)
    .where(task_sessions.c.id == bindparam("session_id"))
    .values(metadata=bindparam("new_metadata", type_=JsonText))
)


OPEN_TURN_IDS = select(turns.c.id).where(turns.c.completed_at.is_(None), authoritative(turns))
# The agent wrote something in the turn after the answer was given: it read the answer.
AGENT_SPOKE_AFTER = (
    select(messages.c.id)
    .where(
        messages.c.turn_id == bindparam("turn_id"),
        messages.c.author_type == "agent",
        messages.c.type != "clarification_request",
        messages.c.created_at > bindparam("after", type_=UtcDateTime),
    )
    .limit(1)
)


async def remember_acp_session(db: Db, session_id: str, acp_session_id: str) -> bool:
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        session = await read_session(conn, session_id)
        if session.metadata.get(MetaKey.ACP_SESSION_ID) == acp_session_id:
            return False
        await conn.execute(
            _SET_SESSION_METADATA,
            {
                "session_id": session_id,
                "new_metadata": {**session.metadata, MetaKey.ACP_SESSION_ID: acp_session_id},
            },
        )
    log.info(
        "agent session recorded",
        extra={"session_id": session_id, "acp_session_id": acp_session_id},
    )
    return True
