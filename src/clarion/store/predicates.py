"""The seed's turn-authority and pending-row rules as SQL expressions.

Imported only inside `clarion.store`. Everything that asks "is this the current turn" or "is
this row pending" goes through here, so the rule lives in one place.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, case, exists, not_, or_, select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import ScalarSelect

from clarion.domain.models import (
    TERMINAL_SESSION_STATES,
    ClarificationStatus,
    MessageType,
    MetaKey,
)
from clarion.store.schema import task_session_messages, task_session_turns, task_sessions
from clarion.store.sql import flag, meta_text

TERMINAL_STATES = tuple(sorted(s.value for s in TERMINAL_SESSION_STATES))
PENDING_STATUSES = ("", ClarificationStatus.PENDING.value)


def referenced(turn_id: ColumnElement[Any]) -> ColumnElement[bool]:
    """Some message belongs to the turn: durable evidence that its prompt may have run."""
    m = task_session_messages.alias()
    return exists().where(m.c.turn_id == turn_id)


def authoritative(turns: Any) -> ColumnElement[bool]:
    """Not an unpublished reservation, or attempted, or referenced by a message."""
    meta = turns.c.metadata
    return or_(
        not_(flag(meta, MetaKey.PROMPT_DISPATCH_PENDING)),
        flag(meta, MetaKey.PROMPT_DISPATCH_ATTEMPTED),
        referenced(turns.c.id),
    )


def current_turn_id(session_id: ColumnElement[Any] | str) -> ScalarSelect[Any]:
    """The session's current turn id: authoritative, not lifecycle_only, open first, then
    started_at, created_at, id, all descending."""
    t = task_session_turns.alias()
    return (
        select(t.c.id)
        .where(
            t.c.task_session_id == session_id,
            not_(flag(t.c.metadata, MetaKey.LIFECYCLE_ONLY)),
            authoritative(t),
        )
        .order_by(
            case((t.c.completed_at.is_(None), 0), else_=1),
            t.c.started_at.desc(),
            t.c.created_at.desc(),
            t.c.id.desc(),
        )
        .limit(1)
        .scalar_subquery()
    )


def session_not_terminal(session_id: ColumnElement[Any]) -> ColumnElement[bool]:
    s = task_sessions.alias()
    return exists().where(s.c.id == session_id, s.c.state.not_in(TERMINAL_STATES))


def not_parent_question(messages: Any = task_session_messages) -> ColumnElement[bool]:
    return not_(flag(messages.c.metadata, MetaKey.PARENT_QUESTION))


def status_pending(messages: Any = task_session_messages) -> ColumnElement[bool]:
    return meta_text(messages.c.metadata, MetaKey.STATUS).in_(PENDING_STATUSES)


def clarification_rows(messages: Any = task_session_messages) -> ColumnElement[bool]:
    """Bundle rows worth looking at: clarification requests, not parent questions."""
    return and_(
        messages.c.pending_id.is_not(None),
        messages.c.type == MessageType.CLARIFICATION_REQUEST.value,
        not_parent_question(messages),
    )


def in_current_turn(messages: Any = task_session_messages) -> ColumnElement[bool]:
    owned: ColumnElement[bool] = messages.c.turn_id == current_turn_id(messages.c.task_session_id)
    return owned


def pending_in_current_turn(messages: Any = task_session_messages) -> ColumnElement[bool]:
    """Operationally pending: status missing/pending, in the current turn. A missing status in
    an older turn is superseded history, never pending."""
    return and_(clarification_rows(messages), status_pending(messages), in_current_turn(messages))
