"""The WebSocket and escalation, through a real `clarion serve --auth` on both databases: a
user a question was escalated to receives that question's events live (the escalation, its
answer) and nothing else of its workspace; a user it was not escalated to receives nothing of
it; the workspace's own members receive what they always did."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection

from tests.auth.conftest import as_user as as_auth_user
from tests.auth.conftest import serve_with_auth
from tests.e2e.harness import ServerProcess, answer, recv_until

CONFIG = """
[agents.builtin.waiting]
escalate_after = "5s"
escalate_to = ["bob"]
"""


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    yield from serve_with_auth(db_url, tmp_path, CONFIG)


class Feed:
    """Everything one socket received, in order, read as far as a test needed."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.seen: list[dict[str, Any]] = []

    def until(self, predicate: Any) -> dict[str, Any]:
        def keep(message: dict[str, Any]) -> bool:
            self.seen.append(message)
            return bool(predicate(message))

        return recv_until(self.ws, keep)

    def about(self, *ids: str) -> list[dict[str, Any]]:
        """The notifications that mention any of `ids`."""
        return [m for m in self.seen if any(i in json.dumps(m) for i in ids)]


def _question_row(message: dict[str, Any], pending_id: str) -> bool:
    payload = message["payload"]
    return bool(
        message["action"].startswith("session.message.")
        and payload.get("type") == "clarification_request"
        and payload.get("metadata", {}).get("pending_id") == pending_id
    )


def test_an_escalated_user_receives_that_questions_events_live_and_nothing_else(
    server: ServerProcess, tmp_path: Path
) -> None:
    def as_user(user: str, workspace: str) -> ServerProcess:
        return as_auth_user(server, user, workspace, tmp_path)

    alice, bob, carol = as_user("alice", "alpha"), as_user("bob", "beta"), as_user("carol", "beta")
    with alice.websocket() as a_ws, bob.websocket() as b_ws, carol.websocket() as c_ws:
        alice_feed, bob_feed, carol_feed = Feed(a_ws), Feed(b_ws), Feed(c_ws)
        task_id = alice.create_task("Alpha's secret")
        session_id = alice.start_session(task_id, "/scenario ask")
        pending_id = alice.wait_for_bundle(session_id)

        # The escalation reaches bob as it happens, without a read of his own.
        escalated = bob_feed.until(lambda m: m["action"] == "clarification.waiting.updated")
        assert escalated["payload"]["pending_id"] == pending_id
        assert escalated["payload"]["escalated_to"] == ["bob"]
        assert bob_feed.about(task_id, session_id, pending_id) == [escalated], (
            "nothing of the question before its escalation"
        )

        # Its answer (alice's) reaches him too: the question's rows, answered.
        assert alice.respond(pending_id, answer(option="sqlite")).status_code == 200
        row = bob_feed.until(
            lambda m: (
                _question_row(m, pending_id) and m["payload"]["metadata"]["status"] == "answered"
            )
        )
        assert "pending_action" not in row["payload"], "the session's projection stays alpha's"
        assert "pending_action_revision" not in row["payload"]

        # Everything the agent does after the answer is on the bus before alice's socket sees
        # the question's turn complete; a task of beta's then marks the end of what bob and
        # carol got.
        alice_feed.until(
            lambda m: (
                m["action"] == "session.turn.completed"
                and m["payload"].get("id") == row["payload"]["turn_id"]
            )
        )
        marker = carol.create_task("Beta's marker")
        for feed in (bob_feed, carol_feed):
            feed.until(lambda m: m["action"] == "task.created" and marker in json.dumps(m))

    # Bob: the escalation and the question's own rows, nothing else of alpha's.
    for message in bob_feed.about(task_id, session_id, pending_id):
        assert message["action"] == "clarification.waiting.updated" or _question_row(
            message, pending_id
        ), message["action"]
        assert "pending_action" not in message["payload"]
    # Carol, in bob's workspace but not escalated to: nothing of it.
    assert carol_feed.about(task_id, session_id, pending_id) == []
    # Alice, in the question's workspace: everything, with the session's projection.
    actions = {m["action"] for m in alice_feed.about(session_id)}
    assert {"session.message.added", "session.turn.started", "session.state_changed"} <= actions
    waiting = [m for m in alice_feed.seen if m["action"] == "clarification.waiting.updated"]
    assert [m["payload"]["escalated_to"] for m in waiting] == [[], ["bob"]]
    rows = [m for m in alice_feed.seen if _question_row(m, pending_id)]
    assert rows and all("pending_action" in m["payload"] for m in rows)
