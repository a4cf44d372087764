"""A question the agent is waiting on cannot vanish: its rows cannot be deleted while the bundle
is active (409 `clarification_active` with the state), and a user cancel that drops queued
prompts says so in its response and in the transcript, with no traceback on /mcp."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.harness import ServerProcess, answer, wait_until
from tests.hardening.conftest import assert_no_traceback

pytestmark = pytest.mark.e2e


def question_rows(server: ServerProcess, session_id: str) -> list[dict[str, Any]]:
    return [m for m in server.messages(session_id) if m["type"] == "clarification_request"]


def asked(server: ServerProcess, scenario: str) -> tuple[str, str]:
    task = server.create_task()
    session = server.start_session(task, scenario)
    return session, server.wait_for_bundle(session)


@pytest.mark.parametrize(
    ("scenario", "state"),
    [("/scenario ask", "active_live"), ("/scenario ask-timeout t=1", "active_detached")],
)
def test_rows_of_an_active_bundle_cannot_be_deleted(
    server: ServerProcess, scenario: str, state: str
) -> None:
    session, pending = asked(server, scenario)
    server.wait_for_state(pending, state)
    (row,) = question_rows(server, session)
    response = server.request("DELETE", f"/task-sessions/{session}/messages/{row['id']}")
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "clarification_active"
    assert error["state"] == state
    assert error["retryable"] is False
    # Nothing changed: the question is still there, still answerable, and answering works.
    assert [r["id"] for r in question_rows(server, session)] == [row["id"]]
    assert server.bundle(pending)["state"] == state
    assert server.respond(pending, answer()).status_code == 200
    assert_no_traceback(server)


def test_rows_of_an_answered_bundle_can_be_deleted(server: ServerProcess) -> None:
    session, pending = asked(server, "/scenario ask")
    server.wait_for_state(pending, "active_live")
    assert server.respond(pending, answer()).status_code == 200
    server.wait_for_agent_text(session, "You answered")
    (row,) = question_rows(server, session)
    server.ok("DELETE", f"/task-sessions/{session}/messages/{row['id']}", 204)
    assert question_rows(server, session) == []


def test_cancel_that_drops_queued_prompts_says_so(server: ServerProcess) -> None:
    session, pending = asked(server, "/scenario ask")
    server.wait_for_state(pending, "active_live")
    queued = server.ok("POST", f"/task-sessions/{session}/prompt", 202, json={"text": "then X"})
    assert queued == {"queued": True}
    reply = server.ok("POST", f"/task-sessions/{session}/cancel")
    assert reply == {"success": True, "dropped_prompts": 1}
    note = wait_until(
        lambda: next(
            (
                m
                for m in server.messages(session)
                if m["author_type"] == "system" and "then X" in m["content"]
            ),
            None,
        ),
        what="the transcript note about the dropped prompt",
    )
    assert "dropped" in note["content"] and "1 queued prompt" in note["content"]
    # The cancelled call leaves the question open for a later answer, and nothing crashed.
    wait_until(lambda: server.bundle(pending)["state"] != "active_live", what="call ended")
    assert_no_traceback(server)


def test_cancel_without_queued_prompts_drops_none(server: ServerProcess) -> None:
    task = server.create_task()
    session = server.start_session(task, "hello")
    assert server.ok("POST", f"/task-sessions/{session}/cancel") == {
        "success": True,
        "dropped_prompts": 0,
    }
    assert not [m for m in server.messages(session) if m["author_type"] == "system"]
