"""The built-in agent's scenarios driven end to end through a real `clarion serve`."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.e2e.harness import SKIP, ServerProcess, answer, recv_until, wait_until


@pytest.fixture
def server(module_server: ServerProcess) -> ServerProcess:
    """The module's one server: each test starts a task and a session of its own and reads
    only those."""
    return module_server


def test_plain_prompt_is_received_by_the_agent(server: ServerProcess) -> None:
    task_id = server.create_task()
    session_id = server.start_session(task_id, "hello there")
    assert server.wait_for_agent_text(session_id, "Received:") == "Received: hello there"


def test_echo_scenario_replies_with_the_rest_of_the_prompt(server: ServerProcess) -> None:
    session_id = server.start_session(server.create_task(), "/scenario echo ping pong")
    assert server.wait_for_agent_text(session_id, "echo:") == "echo: ping pong"


def test_live_answer_over_http_reaches_the_waiting_agent(server: ServerProcess) -> None:
    session_id = server.start_session(server.create_task(), "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)
    assert server.wait_for_state(pending_id, "active_live")["questions"][0]["id"] == "db"

    response = server.respond(pending_id, answer("db", "postgres"))

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True and body["status"] == "answered"
    assert body["resumed"] is False and body["successor_turn_id"] is None
    text = server.wait_for_agent_text(session_id, "You answered:")
    assert json.loads(text.removeprefix("You answered: ")) == {
        "db": {"selected_options": ["postgres"], "custom_text": ""}
    }
    assert server.bundle(pending_id)["state"] == "terminal"


def test_live_skip_is_delivered_to_the_waiting_agent(server: ServerProcess) -> None:
    session_id = server.start_session(server.create_task(), "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_live")

    response = server.respond(pending_id, SKIP)

    assert response.status_code == 200, response.text
    assert response.json()["status"] == "rejected"
    text = server.wait_for_agent_text(session_id, "You answered:")
    assert json.loads(text.removeprefix("You answered: "))["rejected"] is True


def test_multi_question_bundle_with_custom_text(server: ServerProcess) -> None:
    session_id = server.start_session(server.create_task(), "/scenario ask-multi")
    pending_id = server.wait_for_bundle(session_id)
    bundle = server.wait_for_state(pending_id, "active_live")
    assert [q["id"] for q in bundle["questions"]] == ["db", "language", "deploy"]
    assert bundle["context"]

    response = server.respond(
        pending_id,
        {
            "answers": [
                {"question_id": "db", "selected_options": ["sqlite"], "custom_text": ""},
                {"question_id": "language", "selected_options": [], "custom_text": "Zig, honestly"},
                {"question_id": "deploy", "selected_options": ["docker"], "custom_text": ""},
            ],
            "rejected": False,
            "reject_reason": "",
        },
    )

    assert response.status_code == 200, response.text
    text = server.wait_for_agent_text(session_id, "You answered:")
    assert json.loads(text.removeprefix("You answered: "))["language"] == {
        "selected_options": [],
        "custom_text": "Zig, honestly",
    }


def test_agent_timeout_detaches_and_a_late_answer_resumes_the_agent(
    server: ServerProcess,
) -> None:
    session_id = server.start_session(server.create_task(), "/scenario ask-timeout t=1")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_agent_text(session_id, "No answer yet; ending turn.")
    server.wait_for_state(pending_id, "active_detached")

    response = server.respond(pending_id, answer("db", "mongodb"))

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["resumed"] is True and body["successor_turn_id"]
    resumed = server.wait_for_agent_text(session_id, "You previously asked the user:")
    assert "MongoDB" in resumed
    turn_ids = [t["id"] for t in server.turns(session_id)]
    assert body["successor_turn_id"] in turn_ids
    assert server.bundle(pending_id)["state"] == "terminal"


def test_stream_of_fifty_chunks_is_stored_in_order(server: ServerProcess) -> None:
    session_id = server.start_session(server.create_task(), "/scenario stream n=50 ms=0")
    wait_until(
        lambda: any(
            t["completed_at"]
            for t in server.turns(session_id)
            if not t["metadata"].get("lifecycle_only")
        ),
        what="stream turn to complete",
    )
    texts = server.agent_texts(session_id)
    assert len(texts) == 1
    numbers = [int(part) for part in texts[0].split() if part.isdigit()]
    assert numbers == sorted(numbers) and len(numbers) == 50


def test_websocket_sees_the_question_and_its_answer(server: ServerProcess) -> None:
    task_id = server.create_task()
    with server.websocket() as ws:
        ws.send(
            json.dumps(
                {
                    "type": "request",
                    "id": "s1",
                    "action": "subscribe",
                    "payload": {"task_id": task_id},
                }
            )
        )
        ack = recv_until(ws, lambda m: m.get("id") == "s1")
        assert ack["type"] == "response"
        session_id = server.start_session(task_id, "/scenario ask")
        added = recv_until(
            ws,
            lambda m: (
                m["action"] == "session.message.added"
                and m["payload"]["type"] == "clarification_request"
            ),
        )
        assert added["payload"]["pending_action"] == "clarification"
        assert set(added["payload"]["pending_action_revision"]) == {"epoch", "sequence"}
        pending_id = added["payload"]["metadata"]["pending_id"]
        server.wait_for_state(pending_id, "active_live")
        assert server.respond(pending_id, answer()).status_code == 200
        updated = recv_until(
            ws,
            lambda m: (
                m["action"] == "session.message.updated"
                and m["payload"]["metadata"].get("pending_id") == pending_id
                and m["payload"]["metadata"].get("status") == "answered"
                and "pending_action" in m["payload"]
            ),
        )
        assert updated["payload"]["pending_action"] is None
    assert session_id


@pytest.mark.postgres
@pytest.mark.nats
def test_live_answer_on_postgres_and_nats(make_server: Callable[..., ServerProcess]) -> None:
    server = make_server(db="postgres", bus="nats://127.0.0.1:4222")
    server.start()
    session_id = server.start_session(server.create_task(), "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_live")
    assert server.respond(pending_id, answer("db", "sqlite")).status_code == 200
    assert "sqlite" in server.wait_for_agent_text(session_id, "You answered:")
