"""The JSON shapes of durable records, as HTTP, the WebSocket and bus events carry them."""

from __future__ import annotations

from typing import Any

from clarion.domain.models import (
    DISPATCH_KEYS,
    PendingAction,
    Revision,
    StatusSummary,
    Task,
    WorkflowStep,
)
from clarion.domain.wire import iso, message_wire, session_wire, summary_wire, task_wire, turn_wire

from .builders import T0, at, row, session, turn


def test_times_are_iso_strings_and_a_missing_time_is_null() -> None:
    assert iso(T0) == "2026-01-01T00:00:00+00:00"
    assert iso(None) is None


def test_a_turn_hides_its_private_dispatch_keys() -> None:
    private = next(iter(DISPATCH_KEYS))
    metadata: dict[str, Any] = {private: "x", "lifecycle_only": True}
    body = turn_wire(turn("turn-1", completed=5, **metadata))
    assert body["metadata"] == {"lifecycle_only": True}
    assert body["completed_at"] == iso(at(5))
    assert (body["id"], body["session_id"], body["task_id"]) == ("turn-1", "s1", "t1")


def test_a_message_carries_its_id_under_both_names_and_its_kinds_as_strings() -> None:
    message = row("m1", content="Which database?", status="pending")
    body = message_wire(message)
    assert body["id"] == body["message_id"] == "m1"
    assert body["type"] == "clarification_request"
    assert body["author_type"] == message.author_type.value
    assert body["metadata"]["status"] == "pending"
    assert body["content"] == "Which database?"


def test_a_session_shows_its_pending_action_and_revision_only_when_it_has_one() -> None:
    quiet = session_wire(session(), None, None)
    assert quiet["pending_action"] is None
    assert "pending_action_revision" not in quiet
    asking = session_wire(session(), PendingAction.CLARIFICATION, Revision(epoch=3, sequence=7))
    assert asking["pending_action"] == "clarification"
    assert asking["pending_action_revision"] == {"epoch": "3", "sequence": 7}


def test_a_task_carries_its_summary_with_revision_and_its_pending_actions() -> None:
    task = Task("t1", "Title", "Desc", "w1", WorkflowStep.IN_PROGRESS, T0, at(1))
    summary = StatusSummary(task_id="t1", revision=4, data={"state": "x"}, updated_at=at(2))
    body = task_wire(
        task,
        workspace="default",
        summary=summary,
        primary_session_pending_action=PendingAction.CLARIFICATION,
        summary_invalidated=True,
    )
    assert body["status_summary"] == {"state": "x", "revision": 4, "updated_at": iso(at(2))}
    assert body["primary_session_pending_action"] == "clarification"
    assert body["task_pending_action"] is None
    assert body["workflow_step"] == "in_progress"
    assert body["status_summary_invalidated"] is True


def test_a_task_without_a_summary_shows_null_and_no_invalidation_flag() -> None:
    task = Task("t1", "Title", "Desc", "w1", WorkflowStep.BACKLOG, T0, T0)
    body = task_wire(task, workspace="default", summary=None)
    assert body["status_summary"] is None
    assert summary_wire(None) is None
    assert "status_summary_invalidated" not in body
