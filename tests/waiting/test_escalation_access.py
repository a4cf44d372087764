"""Escalation and the access it grants, through a real `clarion serve --auth` on both
databases: from the escalation on, the named user may see and answer that one question (and
nothing else of its task); a user it was not escalated to gains nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.auth.conftest import as_user as as_auth_user
from tests.auth.conftest import serve_with_auth
from tests.e2e.harness import ServerProcess, answer, wait_until

CONFIG = """
[agents.builtin.waiting]
escalate_after = "5s"
escalate_to = ["bob"]
"""


# A role of the question's workspace (alpha), beside a user; beta's role of the same name is
# not alpha's, so carol gains nothing.
ROLE_CONFIG = """
[agents.builtin.waiting]
escalate_after = "5s"
escalate_to = ["dave", { role = "reviewers" }]

[workspaces.alpha.roles]
reviewers = ["bob", "dave"]

[workspaces.beta.roles]
reviewers = ["carol"]
"""


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    yield from serve_with_auth(db_url, tmp_path, CONFIG)


@pytest.fixture
def role_server(db_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    yield from serve_with_auth(db_url, tmp_path, ROLE_CONFIG)


def test_escalation_lets_the_named_user_see_and_answer_that_question_only(
    server: ServerProcess, tmp_path: Path
) -> None:
    def as_user(user: str, workspace: str) -> ServerProcess:
        return as_auth_user(server, user, workspace, tmp_path)

    alice, bob, carol = as_user("alice", "alpha"), as_user("bob", "beta"), as_user("carol", "beta")
    task_id = alice.create_task()
    session_id = alice.start_session(task_id, "/scenario ask")
    pending_id = alice.wait_for_bundle(session_id)

    before = bob.request("GET", f"/clarification/{pending_id}").status_code
    if alice.bundle(pending_id)["escalated_to"] == []:
        assert before == 404, "nobody else sees it before the escalation"

    escalated = wait_until(
        lambda: bob.request("GET", f"/clarification/{pending_id}").status_code == 200,
        timeout=60,
        what="the escalation",
    )
    assert escalated
    assert alice.bundle(pending_id)["escalated_to"] == ["bob"]
    assert bob.bundle(pending_id)["escalated_to"] == ["bob"]
    # That question only: its task, session and transcript stay alpha's.
    assert bob.request("GET", f"/tasks/{task_id}").status_code == 404
    assert bob.request("GET", f"/task-sessions/{session_id}").status_code == 404
    assert bob.request("GET", f"/task-sessions/{session_id}/messages").status_code == 404
    assert bob.request("POST", f"/clarification/{pending_id}/cancel").status_code == 404
    # Nobody else gains anything.
    assert carol.request("GET", f"/clarification/{pending_id}").status_code == 404
    refused = carol.request("POST", f"/clarification/{pending_id}/respond", json=answer())
    assert refused.status_code == 404
    assert alice.bundle(pending_id)["state"] == "active_live", "the refused answer wrote nothing"

    answer_sqlite = answer(option="sqlite")
    answered = bob.request("POST", f"/clarification/{pending_id}/respond", json=answer_sqlite)
    assert answered.status_code == 200, answered.text
    assert alice.wait_for_agent_text(session_id, "You answered:")
    assert alice.bundle(pending_id)["answered_by"] == "person"


def _inbox_ids(who: ServerProcess) -> list[str]:
    return [item["id"] for item in who.ok("GET", "/inbox")["items"]]


def test_an_escalated_users_inbox_lists_that_question_and_nothing_else_of_its_workspace(
    server: ServerProcess, tmp_path: Path
) -> None:
    def as_user(user: str, workspace: str) -> ServerProcess:
        return as_auth_user(server, user, workspace, tmp_path)

    alice, bob, carol = as_user("alice", "alpha"), as_user("bob", "beta"), as_user("carol", "beta")
    # Something else of alpha's that waits for a person: a permission request (never escalated).
    other = alice.start_session(alice.create_task(), "/scenario permission")
    task_id = alice.create_task()
    session_id = alice.start_session(task_id, "/scenario ask")
    pending_id = alice.wait_for_bundle(session_id)
    wait_until(
        lambda: any(i["session_id"] == other for i in alice.ok("GET", "/inbox")["items"]),
        timeout=60,
        what="the permission request in alpha's inbox",
    )
    if alice.bundle(pending_id)["escalated_to"] == []:
        assert _inbox_ids(bob) == [], "nothing before the escalation"

    wait_until(lambda: _inbox_ids(bob) == [pending_id], timeout=60, what="the escalated question")
    items = bob.ok("GET", "/inbox")["items"]
    assert [(i["kind"], i["session_id"]) for i in items] == [("clarification", session_id)]
    assert items[0]["escalated_to"] == ["bob"]
    assert items[0]["questions"], "the item carries the question itself"
    assert bob.ok("GET", "/inbox")["total"] == 1
    assert _inbox_ids(carol) == [], "nobody else's inbox gains it"
    assert pending_id in _inbox_ids(alice), "the workspace's own members still see it"

    answered = bob.request("POST", f"/clarification/{pending_id}/respond", json=answer())
    assert answered.status_code == 200, answered.text
    wait_until(lambda: _inbox_ids(bob) == [], timeout=60, what="the answered question to leave")


def test_escalation_to_a_role_reaches_its_members_in_the_questions_workspace(
    role_server: ServerProcess, tmp_path: Path
) -> None:
    def as_user(user: str, workspace: str) -> ServerProcess:
        return as_auth_user(role_server, user, workspace, tmp_path)

    alice, bob, carol = as_user("alice", "alpha"), as_user("bob", "beta"), as_user("carol", "beta")
    dave = as_user("dave", "gamma")
    session_id = alice.start_session(alice.create_task(), "/scenario ask")
    pending_id = alice.wait_for_bundle(session_id)

    wait_until(lambda: _inbox_ids(bob) == [pending_id], timeout=60, what="the escalation")
    assert alice.bundle(pending_id)["escalated_to"] == ["dave", "bob"], "resolved, once each"
    assert _inbox_ids(dave) == [pending_id]
    assert dave.request("GET", f"/clarification/{pending_id}").status_code == 200
    assert carol.request("GET", f"/clarification/{pending_id}").status_code == 404
    assert _inbox_ids(carol) == [], "another workspace's role of the same name gains nothing"
    answered = bob.request("POST", f"/clarification/{pending_id}/respond", json=answer())
    assert answered.status_code == 200, answered.text
