"""Row -> domain record conversion.

Imported only inside `clarion.store`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Label

from clarion.domain.models import (
    AuthorType,
    Message,
    MessageType,
    Session,
    SessionState,
    Task,
    Turn,
    WorkflowStep,
    Workspace,
    Worktree,
    WorktreeState,
)
from clarion.store.db.schema import task_sessions

# A result row: SQLAlchemy's `Row`, or the fast path's named tuple
# (`clarion.store.db.fastpath_rows`); both give the columns by attribute.
Record = Any


def to_workspace(row: Record) -> Workspace:
    return Workspace(id=row.id, name=row.name)


def to_task(row: Record) -> Task:
    return Task(
        id=row.id,
        title=row.title,
        description=row.description,
        workspace_id=row.workspace_id,
        workflow_step=WorkflowStep(row.workflow_step),
        created_at=row.created_at,
        updated_at=row.updated_at,
        repository=row.repository,
        worktree=_worktree(row),
    )


def _worktree(row: Record) -> Worktree | None:
    if row.worktree_state is None:
        return None
    return Worktree(
        path=row.worktree_path,
        branch=row.worktree_branch,
        base=row.worktree_base,
        state=WorktreeState(row.worktree_state),
    )


def to_session(row: Record) -> Session:
    return Session(
        id=row.id,
        task_id=row.task_id,
        agent=row.agent,
        state=SessionState(row.state),
        is_primary=bool(row.is_primary),
        created_at=row.created_at,
        updated_at=row.updated_at,
        metadata=row.metadata,
        owner_replica_id=row.owner_replica_id,
    )


# A statement that reads a session beside other rows names the session's columns with this
# prefix (`session_state`, ...): `prefixed_session_columns` selects them, `to_prefixed_session`
# reads them back.
SESSION_PREFIX = "session_"


def prefixed_session_columns() -> list[Label[Any]]:
    return [column.label(SESSION_PREFIX + column.name) for column in task_sessions.c]


class _SessionColumns:
    """A row's prefixed session columns under their own names, for `to_session`."""

    __slots__ = ("_row",)

    def __init__(self, row: Record) -> None:
        self._row = row

    def __getattr__(self, name: str) -> Any:
        return getattr(self._row, SESSION_PREFIX + name)


def to_prefixed_session(row: Record) -> Session:
    return to_session(_SessionColumns(row))


def to_turn(row: Record) -> Turn:
    return Turn(
        id=row.id,
        session_id=row.task_session_id,
        task_id=row.task_id,
        started_at=row.started_at,
        completed_at=row.completed_at,
        metadata=row.metadata,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def to_message(row: Record) -> Message:
    return Message(
        id=row.id,
        session_id=row.task_session_id,
        task_id=row.task_id,
        turn_id=row.turn_id,
        author_type=AuthorType(row.author_type),
        type=MessageType(row.type),
        content=row.content,
        metadata=row.metadata,
        created_at=row.created_at,
        updated_at=row.updated_at,
        requests_input=bool(row.requests_input),
    )
