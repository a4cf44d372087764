"""A task summary's inputs in one statement: the stored summary, the task's sessions with their
current turns, and each session's pending action. Store-internal.

A summary refresh runs on every change of a session's pending state, twice per ask -> answer
cycle. Read as separate statements (the summary, the sessions, the pending clarifications, the
newest permission requests) it cost up to four round trips on PostgreSQL; here the per-session
facts are correlated subqueries over the current turn's rows, found through the same indexes
(`pending_actions.py` reads them for a list of sessions). One statement is also one snapshot,
so the summary is never older than the rows it is compared with.

The anchor row keeps the summary when the task has no sessions: the summary and the sessions
are both left-joined to it, so the statement returns one row per session, or one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, exists, func, literal_column, select, true
from sqlalchemy.sql.elements import BindParameter

from clarion.domain.models import MessageType, MetaKey, PendingAction, Session, StatusSummary
from clarion.ports import SummaryInputs
from clarion.store.db.fastpath import hot
from clarion.store.db.portable_sql import meta_text
from clarion.store.db.predicates import (
    PENDING_STATUSES,
    TERMINAL_STATES,
    clarification_rows,
    current_turn_id,
    not_parent_question,
    status_pending,
)
from clarion.store.db.row_conversion import to_session
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_sessions, task_status_summaries
from clarion.store.db.transactions import Tx

_TASK: BindParameter[str] = bindparam("task_id")
_sessions = (
    select(task_sessions, current_turn_id(task_sessions.c.id).label("current_turn_id"))
    .where(task_sessions.c.task_id == _TASK)
    .subquery("s")
)
_clarification = messages.alias("c")
_permission = messages.alias("p")
# Some pending clarification row in the session's current turn.
_CLARIFYING = exists().where(
    _clarification.c.turn_id == _sessions.c.current_turn_id,
    _clarification.c.task_session_id == _sessions.c.id,
    clarification_rows(_clarification),
    status_pending(_clarification),
)
# The status of the newest permission request of the current turn, which decides (the older
# ones are history): '' when it has none, NULL when the turn has no request.
_NEWEST_PERMISSION = (
    select(func.coalesce(meta_text(_permission.c.metadata, MetaKey.STATUS), literal_column("''")))
    .where(
        _permission.c.turn_id == _sessions.c.current_turn_id,
        _permission.c.task_session_id == _sessions.c.id,
        _permission.c.type == MessageType.PERMISSION_REQUEST.value,
        not_parent_question(_permission),
    )
    .order_by(_permission.c.created_at.desc(), _permission.c.id.desc())
    .limit(1)
    .scalar_subquery()
)
_anchor = select(literal_column("1").label("one")).subquery("anchor")
SUMMARY_INPUTS = hot(
    select(
        task_status_summaries.c.revision.label("summary_revision"),
        task_status_summaries.c.summary.label("summary_data"),
        task_status_summaries.c.updated_at.label("summary_updated_at"),
        *_sessions.c,
        _CLARIFYING.label("clarifying"),
        _NEWEST_PERMISSION.label("permission_status"),
    )
    .select_from(
        _anchor.outerjoin(
            task_status_summaries, task_status_summaries.c.task_id == _TASK
        ).outerjoin(_sessions, true())
    )
    .order_by(_sessions.c.created_at, _sessions.c.id)
)


def _action(row: Any) -> PendingAction | None:
    """The session's pending action: none for an ended session or one without a current turn;
    a clarification outranks a permission within a session."""
    if row.current_turn_id is None or row.state in TERMINAL_STATES:
        return None
    if row.clarifying:
        return PendingAction.CLARIFICATION
    if row.permission_status in PENDING_STATUSES:
        return PendingAction.PERMISSION
    return None


async def read_summary_inputs(conn: Tx, task_id: str) -> SummaryInputs:
    rows: Sequence[Any] = list(await conn.execute(SUMMARY_INPUTS, {"task_id": task_id}))
    first = rows[0]
    summary = None
    if first.summary_revision is not None:
        summary = StatusSummary(
            task_id=task_id,
            revision=first.summary_revision,
            data=first.summary_data,
            updated_at=first.summary_updated_at,
        )
    sessions: list[Session] = []
    actions: dict[str, PendingAction | None] = {}
    for row in rows:
        if row.id is None:  # the anchor alone: a task without sessions
            continue
        sessions.append(to_session(row))
        actions[str(row.id)] = _action(row)
    return SummaryInputs(summary=summary, sessions=tuple(sessions), actions=actions)
