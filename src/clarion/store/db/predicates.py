"""The seed's turn-authority and pending-row rules as SQL expressions.

Imported only inside `clarion.store`. Everything that asks "is this the current turn" or "is
this row pending" goes through here, so the rule lives in one place.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, and_, exists, func, literal_column, not_, or_, select
from sqlalchemy.sql.elements import BindParameter, ColumnElement

from clarion.domain.models import (
    TERMINAL_SESSION_STATES,
    ClarificationStatus,
    MessageType,
    MetaKey,
)
from clarion.store.db.portable_sql import flag, meta_text
from clarion.store.db.schema import task_session_messages, task_session_turns, task_sessions

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


def _newest_first(t: Any) -> tuple[ColumnElement[Any], ...]:
    return (t.c.started_at.desc(), t.c.created_at.desc(), t.c.id.desc())


def _candidate(t: Any, session_id: ColumnElement[Any] | str) -> tuple[ColumnElement[bool], ...]:
    return (
        t.c.task_session_id == session_id,
        not_(flag(t.c.metadata, MetaKey.LIFECYCLE_ONLY)),
        authoritative(t),
    )


def current_turn_id(session_id: ColumnElement[Any] | str) -> ColumnElement[Any]:
    """The session's current turn id: authoritative, not lifecycle_only, open first, then
    started_at, created_at, id, all descending.

    Two index walks instead of one sort: the newest open candidate, else the newest candidate
    of all. Each walks `(task_session_id, [completed_at,] started_at, created_at, id)` backwards
    and stops at the first row that qualifies, so the cost does not grow with the session's
    history. Given a plain session id (not a column) the expression is uncorrelated, and both
    databases evaluate it once per statement.
    """
    open_turns = task_session_turns.alias()
    any_turns = task_session_turns.alias()
    newest_open = (
        select(open_turns.c.id)
        .where(*_candidate(open_turns, session_id), open_turns.c.completed_at.is_(None))
        .order_by(*_newest_first(open_turns))
        .limit(1)
        .scalar_subquery()
    )
    newest = (
        select(any_turns.c.id)
        .where(*_candidate(any_turns, session_id))
        .order_by(*_newest_first(any_turns))
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(newest_open, newest)


def session_not_terminal(session_id: ColumnElement[Any]) -> ColumnElement[bool]:
    s = task_sessions.alias()
    return exists().where(s.c.id == session_id, s.c.state.not_in(TERMINAL_STATES))


def not_parent_question(messages: Any = task_session_messages) -> ColumnElement[bool]:
    return not_(flag(messages.c.metadata, MetaKey.PARENT_QUESTION))


# In the SQL text, not bound: a plan made for any parameters (PostgreSQL's generic plan) then
# still knows that only these statuses are wanted, and seeks ix_messages_turn_status rather
# than reading every row of the turn; none of them holds a quote.
_PENDING_LITERALS: tuple[ColumnElement[str], ...] = tuple(
    literal_column(f"'{status}'") for status in PENDING_STATUSES
)


def status_pending(messages: Any = task_session_messages) -> ColumnElement[bool]:
    return meta_text(messages.c.metadata, MetaKey.STATUS).in_(_PENDING_LITERALS)


def clarification_rows(messages: Any = task_session_messages) -> ColumnElement[bool]:
    """Bundle rows worth looking at: clarification requests, not parent questions."""
    return and_(
        messages.c.pending_id.is_not(None),
        messages.c.type == MessageType.CLARIFICATION_REQUEST.value,
        not_parent_question(messages),
    )


def in_current_turn(
    messages: Any = task_session_messages, *, session_id: str | BindParameter[Any] | None = None
) -> ColumnElement[bool]:
    """The row belongs to its session's current turn.

    With `session_id` (a statement about one session) the current turn is computed once and
    the rows are found through the turn index. Without it the check is correlated per row, so
    use it only where the other conditions already narrow the rows to a handful.
    """
    if session_id is not None:
        return and_(
            messages.c.task_session_id == session_id,
            messages.c.turn_id == current_turn_id(session_id),
        )
    owned: ColumnElement[bool] = messages.c.turn_id == current_turn_id(messages.c.task_session_id)
    return owned


def current_turns(sessions: ColumnElement[bool]) -> Select[tuple[Any, Any]]:
    """(session id, current turn id) of every session matching `sessions` (a condition on
    `task_sessions`). The current turn is computed once per session; callers then find the
    rows of those turns through the turn index (`turn_id IN (...)`) instead of checking every
    candidate row against its session's turns."""
    return select(task_sessions.c.id, current_turn_id(task_sessions.c.id)).where(sessions)


def pending_in_current_turn(
    messages: Any = task_session_messages, *, session_id: str | BindParameter[Any] | None = None
) -> ColumnElement[bool]:
    """Operationally pending: status missing/pending, in the current turn. A missing status in
    an older turn is superseded history, never pending."""
    return and_(
        clarification_rows(messages),
        status_pending(messages),
        in_current_turn(messages, session_id=session_id),
    )
