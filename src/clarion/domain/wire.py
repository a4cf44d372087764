"""JSON shapes of the durable records, shared by HTTP responses, WebSocket and bus events.

Names follow kandev's DTOs (contract section 5). Pure: no I/O, standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from clarion.domain.agent_process import agent_process, agent_process_note
from clarion.domain.models import (
    Message,
    PendingAction,
    Revision,
    Session,
    StatusSummary,
    Task,
    Turn,
    Worktree,
)
from clarion.domain.turns import public_metadata


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def turn_wire(turn: Turn) -> dict[str, Any]:
    return {
        "id": turn.id,
        "session_id": turn.session_id,
        "task_id": turn.task_id,
        "started_at": iso(turn.started_at),
        "completed_at": iso(turn.completed_at),
        "metadata": public_metadata(turn.metadata),
        "created_at": iso(turn.created_at),
        "updated_at": iso(turn.updated_at),
    }


def message_wire(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "message_id": message.id,
        "session_id": message.session_id,
        "task_id": message.task_id,
        "turn_id": message.turn_id,
        "author_type": str(message.author_type),
        "type": str(message.type),
        "content": message.content,
        "requests_input": message.requests_input,
        "metadata": dict(message.metadata),
        "created_at": iso(message.created_at),
        "updated_at": iso(message.updated_at),
    }


def session_wire(
    session: Session,
    pending_action: PendingAction | None,
    revision: Revision | None,
    *,
    running_here: bool | None = None,
    sandbox: str = "none",
    replica_urls: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`running_here`: whether this process runs the session's agent (None: not known here);
    `sandbox`: what its profile's agents run under, `bwrap` or `none`; `replica_urls`: the
    advertise URLs of the replicas known (cluster mode)."""
    process = agent_process(session, running_here)
    body: dict[str, Any] = {
        "id": session.id,
        "task_id": session.task_id,
        "agent": session.agent,
        "agent_process": str(process),
        # Why the agent is not running and what brings it back, for a person; else null.
        "agent_process_note": agent_process_note(session, process),
        "sandbox": sandbox,
        "state": str(session.state),
        "is_primary": session.is_primary,
        "pending_action": None if pending_action is None else str(pending_action),
        # Why the agent last failed, in one sentence (the transcript's `error` row has more).
        "error": session.metadata.get("error"),
        "created_at": iso(session.created_at),
        "updated_at": iso(session.updated_at),
    }
    if revision is not None:
        body["pending_action_revision"] = revision.as_wire()
    body.update(owner_wire(session, replica_urls))
    return body


def owner_wire(session: Session, replica_urls: Mapping[str, str] | None) -> dict[str, Any]:
    """Cluster mode: which replica runs the session's agent, and its advertise URL (null when
    that replica is not known live), where a client may send requests for the session
    directly; nothing for a single server's session."""
    owner = session.owner_replica_id
    if owner is None:
        return {}
    return {"replica_id": owner, "replica_url": (replica_urls or {}).get(owner)}


def summary_wire(summary: StatusSummary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    body = dict(summary.data)
    body["revision"] = summary.revision
    body["updated_at"] = iso(summary.updated_at)
    return body


def task_wire(
    task: Task,
    *,
    workspace: str,
    summary: StatusSummary | None,
    primary_session_pending_action: PendingAction | None = None,
    task_pending_action: PendingAction | None = None,
    summary_invalidated: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": task.id,
        "title": task.title,
        "description": task.description,
        "workspace": workspace,
        "workspace_id": task.workspace_id,
        "workflow_step": str(task.workflow_step),
        "status_summary": summary_wire(summary),
        "primary_session_pending_action": _action(primary_session_pending_action),
        "task_pending_action": _action(task_pending_action),
        "repository": task.repository,
        "worktree": worktree_wire(task.worktree),
        "created_at": iso(task.created_at),
        "updated_at": iso(task.updated_at),
    }
    if summary_invalidated:
        body["status_summary_invalidated"] = True
    return body


def worktree_wire(worktree: Worktree | None) -> dict[str, str] | None:
    if worktree is None:
        return None
    return {
        "path": worktree.path,
        "branch": worktree.branch,
        "base": worktree.base,
        "state": str(worktree.state),
    }


def _action(action: PendingAction | None) -> str | None:
    return None if action is None else str(action)
