"""Answers whose delivery is unknown, sent again; agents' context.

Store-internal. A live answer whose turn a restart interrupted before the agent wrote anything
after it reads ambiguous: the confirmation commits before the tool result is written back, so
the agent may never have read it. So does one whose tool call the agent reported failed
(MARK_UNREAD on that bundle: its client gave up as the answer was confirmed). A resend is
claimed like a response: one write under the session lock marks the bundle's ambiguous rows
`resend_pending` (at most one resend in flight), and it either settles (`delivery: "delivered"`,
the turn it started recorded) or is released back to ambiguous. Startup releases every resend a
stopped process left in flight: whether that agent got the prompt is as unknown as the first
dispatch was.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam, select, update

from clarion.domain.flags import flag as is_set
from clarion.domain.lifecycle import (
    CLAIM_RESEND,
    FINISH_RESEND,
    MARK_UNREAD,
    RELEASE_RESEND,
    Transition,
)
from clarion.domain.models import Delivery, Message, MetaKey
from clarion.store.bundle_rows import bundle_rows, lock_bundle_session, rewrite
from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import JsonText, UtcDateTime, meta_text
from clarion.store.db.predicates import authoritative, clarification_rows
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
# Answers confirmed to a live waiter: the confirmation records `delivery: "delivered"`.
DELIVERED_IN = (
    clarification_rows(),
    meta_text(messages.c.metadata, MetaKey.DELIVERY) == Delivery.DELIVERED.value,
)
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


def _ambiguous(row: Message) -> bool:
    return row.metadata.get(MetaKey.DELIVERY) == Delivery.AMBIGUOUS.value


def _delivered(row: Message) -> bool:
    return row.metadata.get(MetaKey.DELIVERY) == Delivery.DELIVERED.value


RESEND_TRANSITIONS = frozenset({MARK_UNREAD, CLAIM_RESEND, RELEASE_RESEND, FINISH_RESEND})


async def transition_resend(
    db: Db,
    pending_id: str,
    transition: Transition,
    values: Mapping[str, Any] | None = None,
) -> tuple[Message, ...]:
    """One of RESEND_TRANSITIONS on the bundle, under its session's lock: MARK_UNREAD marks its
    delivered rows ambiguous (none once resent: FINISH_RESEND records the turn); CLAIM_RESEND
    marks its ambiguous rows while the session is live and no resend is in flight; the others
    act on the rows in flight. The rows it changed; () when it did not apply."""
    async with db.write() as conn:
        session_id = await lock_bundle_session(db, conn, pending_id)
        if session_id is None:
            return ()
        if transition is MARK_UNREAD:
            rows = [
                r
                for r in await bundle_rows(conn, pending_id)
                if _delivered(r) and MetaKey.RESENT_TURN_ID not in r.metadata
            ]
        elif transition is CLAIM_RESEND:
            if (await read_session(conn, session_id)).state.is_terminal:
                return ()
            rows = [r for r in await bundle_rows(conn, pending_id) if _ambiguous(r)]
            if any(is_set(r.metadata, MetaKey.RESEND_PENDING) for r in rows):
                return ()
        else:
            rows = [
                r
                for r in await bundle_rows(conn, pending_id)
                if is_set(r.metadata, MetaKey.RESEND_PENDING)
            ]
        changed = await rewrite(conn, rows, transition, values=values)
    if changed:
        log.info(
            "resend transition applied",
            extra={"pending_id": pending_id, "transition": str(transition), "rows": len(changed)},
        )
    return changed


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
