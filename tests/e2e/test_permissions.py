"""Agent permission requests end to end: a real server, the real built-in agent asking over ACP
`session/request_permission`, and a person deciding over HTTP."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.e2e.harness import ServerProcess, answer, recv_until, wait_until
from tests.e2e.permission_steps import (
    builtin_command,
    decide,
    permission,
    permission_rows,
    session,
    wait_for_permission,
    wait_for_session_state,
    write_config,
)

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture
def server(module_server: ServerProcess) -> ServerProcess:
    """The module's one server, for the tests that take `server`: each asks and decides in a
    task and session of its own and reads only those (per-database tests make their own)."""
    return module_server


def _asking(server: ServerProcess, prompt: str = "/scenario permission") -> tuple[str, str, str]:
    task_id = server.create_task()
    session_id = server.start_session(task_id, prompt)
    row = wait_for_permission(server, session_id)
    return task_id, session_id, str(row["id"])


@pytest.mark.parametrize("db", DBS)
def test_a_request_is_written_pending_in_the_turn_and_the_session_waits_for_input(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start()
    task_id, session_id, message_id = _asking(server)

    row = next(m for m in permission_rows(server, session_id) if m["id"] == message_id)
    assert row["author_type"] == "agent"
    assert row["content"] == "Edit README.md"
    assert row["turn_id"] == server.turns(session_id)[-1]["id"]
    meta = row["metadata"]
    assert meta["tool_call"]["title"] == "Edit README.md"
    assert meta["tool_call"]["kind"] == "edit"
    assert meta["tool_call"]["raw_input"]["path"] == "README.md"
    assert [o["option_id"] for o in meta["options"]] == [
        "allow",
        "allow-always",
        "reject",
        "reject-always",
    ]
    assert [o["kind"] for o in meta["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    waiting = wait_for_session_state(server, session_id, "WAITING_FOR_INPUT")
    assert waiting["pending_action"] == "permission"
    view = permission(server, message_id)
    assert view["state"] == "pending"
    assert view["session_id"] == session_id and view["task_id"] == task_id
    assert view["turn_id"] == row["turn_id"]
    assert view["tool_call"]["kind"] == "edit"
    assert view["decision"] is None
    task = server.ok("GET", f"/tasks/{task_id}")["task"]
    assert task["status_summary"]["pending_action"] == "permission"


@pytest.mark.parametrize("db", DBS)
@pytest.mark.parametrize(
    ("option", "state"),
    [("allow", "approved"), ("allow-always", "approved"), ("reject", "rejected")],
)
def test_the_persons_decision_reaches_the_waiting_agent(
    make_server: Callable[..., ServerProcess], db: str, option: str, state: str
) -> None:
    server = make_server(db=db)
    server.start()
    _, session_id, message_id = _asking(server)

    response = decide(server, message_id, {"option_id": option})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True and body["state"] == state and body["delivered"] is True
    assert body["decision"]["option_id"] == option
    assert body["decision"]["decided_by"] == "user"
    server.wait_for_agent_text(session_id, f"Permission: {option}")
    view = permission(server, message_id)
    assert view["state"] == state and view["decision"]["option_id"] == option
    idle = wait_for_session_state(server, session_id, "IDLE")
    assert idle["pending_action"] is None


def test_a_cancelled_decision_reaches_the_agent_as_cancelled(server: ServerProcess) -> None:
    _, session_id, message_id = _asking(server)

    response = decide(server, message_id, {"cancelled": True})

    assert response.status_code == 200, response.text
    assert response.json()["state"] == "cancelled"
    server.wait_for_agent_text(session_id, "Permission: cancelled")


def test_an_unknown_option_is_refused_and_writes_nothing(server: ServerProcess) -> None:
    _, _, message_id = _asking(server)

    response = decide(server, message_id, {"option_id": "maybe"})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_response" and error["field"] == "option_id"
    assert error["retryable"] is False
    assert permission(server, message_id)["state"] == "pending"
    bad_shape = decide(server, message_id, {"option_id": 3})
    assert bad_shape.status_code == 400 and bad_shape.json()["error"]["field"] == "option_id"
    assert decide(server, message_id, {"option_id": "allow"}).status_code == 200


def test_a_second_decision_is_refused_with_the_winner(server: ServerProcess) -> None:
    _, session_id, message_id = _asking(server)
    assert decide(server, message_id, {"option_id": "reject"}).status_code == 200

    response = decide(server, message_id, {"option_id": "allow"})

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "not_active" and error["state"] == "rejected"
    assert error["decision"]["option_id"] == "reject"
    server.wait_for_agent_text(session_id, "Permission: reject")
    assert permission(server, message_id)["state"] == "rejected"


def test_an_unknown_request_is_not_found(server: ServerProcess) -> None:
    assert server.request("GET", "/permission/nope").status_code == 404
    response = decide(server, "nope", {"option_id": "allow"})
    assert response.status_code == 404


def _race(
    server: ServerProcess, message_id: str, options: tuple[str, ...]
) -> dict[str, httpx.Response]:
    """Post one decision per option at the same moment, from one thread each."""
    barrier = threading.Barrier(len(options))
    results: dict[str, httpx.Response] = {}

    def post(option: str) -> None:
        barrier.wait()
        results[option] = decide(server, message_id, {"option_id": option})

    threads = [threading.Thread(target=post, args=(o,)) for o in options]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


@pytest.mark.parametrize("db", DBS)
def test_racing_deciders_exactly_one_wins_and_the_other_sees_the_winner(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start()
    for _ in range(3):
        _, session_id, message_id = _asking(server)

        results = _race(server, message_id, ("allow", "reject"))

        statuses = sorted(r.status_code for r in results.values())
        assert statuses == [200, 409], {o: r.text for o, r in results.items()}
        winner = next(o for o, r in results.items() if r.status_code == 200)
        loser = next(r for r in results.values() if r.status_code == 409).json()["error"]
        assert loser["code"] == "not_active"
        assert loser["decision"]["option_id"] == winner
        server.wait_for_agent_text(session_id, f"Permission: {winner}")
        texts = [t for t in server.agent_texts(session_id) if t.startswith("Permission:")]
        assert texts == [f"Permission: {winner}"]
        assert permission(server, message_id)["decision"]["option_id"] == winner


def test_websocket_sees_the_request_and_its_decision(server: ServerProcess) -> None:
    with server.websocket() as ws:
        _, session_id, message_id = _asking(server)

        def about(action: str, status: str) -> Callable[[dict[str, Any]], bool]:
            def match(m: dict[str, Any]) -> bool:
                payload = m.get("payload") or {}
                return bool(
                    m.get("action") == f"session.message.{action}"
                    and payload.get("id") == message_id
                    and payload["metadata"]["status"] == status
                )

            return match

        added = recv_until(ws, about("added", "pending"))
        assert added["payload"]["type"] == "permission_request"
        assert added["payload"]["pending_action"] == "permission"
        assert decide(server, message_id, {"option_id": "allow"}).status_code == 200
        updated = recv_until(ws, about("updated", "approved"))
        assert updated["payload"]["metadata"]["decision"]["option_id"] == "allow"
    server.wait_for_agent_text(session_id, "Permission: allow")


def test_permission_then_ask_asks_the_question_after_the_decision(server: ServerProcess) -> None:
    _, session_id, message_id = _asking(server, "/scenario permission-then-ask")
    assert session(server, session_id)["pending_action"] == "permission"

    assert decide(server, message_id, {"option_id": "allow"}).status_code == 200

    server.wait_for_agent_text(session_id, "Permission: allow")
    pending_id = server.wait_for_bundle(session_id)
    wait_until(
        lambda: session(server, session_id)["pending_action"] == "clarification",
        what="the session's clarification",
    )
    assert server.respond(pending_id, answer("db", "sqlite")).status_code == 200
    server.wait_for_agent_text(session_id, "You answered:")


def test_task_level_permission_outranks_a_clarification(server: ServerProcess) -> None:
    task_id = server.create_task()
    asking = server.start_session(task_id, "/scenario ask")
    server.wait_for_bundle(asking)
    wait_until(
        lambda: (
            server.ok("GET", f"/tasks/{task_id}")["task"]["status_summary"]["pending_action"]
            == "clarification"
        ),
        what="the task's clarification",
    )
    permitting = server.start_session(task_id, "/scenario permission")
    wait_for_permission(server, permitting)

    def summary() -> Any:
        return server.ok("GET", f"/tasks/{task_id}")["task"]["status_summary"]["pending_action"]

    wait_until(lambda: summary() == "permission", what="the task's permission")
    assert session(server, asking)["pending_action"] == "clarification"
    assert session(server, permitting)["pending_action"] == "permission"


# ------------------------------------------------------------------ policy


def _policy_server(make_server: Callable[..., ServerProcess], tmp_path: Any) -> ServerProcess:
    config = write_config(
        tmp_path,
        f"""
[agents.careful]
command = {builtin_command()}

[agents.careful.permissions]
allow = ["read", "search"]
reject = ["execute"]
""",
    )
    server = make_server(CLARION_CONFIG=config)
    server.start()
    return server


@pytest.mark.parametrize(
    ("kind", "option", "status"),
    [("read", "allow", "approved"), ("execute", "reject", "rejected")],
)
def test_the_profile_policy_decides_without_asking(
    make_server: Callable[..., ServerProcess], tmp_path: Any, kind: str, option: str, status: str
) -> None:
    server = _policy_server(make_server, tmp_path)
    session_id = server.start_session(
        server.create_task(), f"/scenario permission kind={kind}", agent="careful"
    )

    server.wait_for_agent_text(session_id, f"Permission: {option}")

    [row] = permission_rows(server, session_id)
    assert row["metadata"]["status"] == status
    assert row["metadata"]["decided_by"] == "policy"
    assert row["metadata"]["decision"]["option_id"] == option
    assert permission(server, row["id"])["state"] == status
    assert session(server, session_id)["pending_action"] is None


def test_a_kind_the_policy_does_not_name_asks_the_person(
    make_server: Callable[..., ServerProcess], tmp_path: Any
) -> None:
    server = _policy_server(make_server, tmp_path)
    session_id = server.start_session(
        server.create_task(), "/scenario permission kind=edit", agent="careful"
    )
    row = wait_for_permission(server, session_id)
    assert decide(server, row["id"], {"option_id": "allow"}).status_code == 200
    server.wait_for_agent_text(session_id, "Permission: allow")


def test_the_question_tool_is_always_allowed_never_shown(server: ServerProcess) -> None:
    session_id = server.start_session(
        server.create_task(),
        "/scenario permission kind=other title=mcp__clarion__ask_user_question",
    )

    server.wait_for_agent_text(session_id, "Permission: allow")

    [row] = permission_rows(server, session_id)
    assert row["metadata"]["status"] == "approved"
    assert row["metadata"]["decided_by"] == "policy"
    assert session(server, session_id)["pending_action"] is None


# ------------------------------------------------------------------ end of the call


def test_cancelling_the_turn_cancels_the_request(server: ServerProcess) -> None:
    _, session_id, message_id = _asking(server)

    server.ok("POST", f"/task-sessions/{session_id}/cancel")

    view = wait_until(
        lambda: (v := permission(server, message_id))["state"] == "cancelled" and v,
        what="the request cancelled",
    )
    assert view["decision"] is None
    idle = wait_for_session_state(server, session_id, "IDLE")
    assert idle["pending_action"] is None
    response = decide(server, message_id, {"option_id": "allow"})
    assert response.status_code == 409
    assert response.json()["error"]["state"] == "cancelled"


def test_finishing_the_session_cancels_the_request(server: ServerProcess) -> None:
    _, session_id, message_id = _asking(server)

    server.ok("POST", f"/task-sessions/{session_id}/finish", json={"state": "completed"})

    assert permission(server, message_id)["state"] == "cancelled"
    assert decide(server, message_id, {"option_id": "allow"}).status_code == 409


@pytest.mark.parametrize("db", DBS)
def test_a_restart_expires_a_pending_request_and_leaves_the_session_usable(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start()
    _, session_id, message_id = _asking(server)

    server.kill()
    server.start()

    rows = permission_rows(server, session_id)
    assert [r["metadata"]["status"] for r in rows] == ["expired"]
    assert rows[0]["metadata"]["reason"] == "server_restarted"
    assert permission(server, message_id)["state"] == "expired"
    response = decide(server, message_id, {"option_id": "allow"})
    assert response.status_code == 409 and response.json()["error"]["state"] == "expired"
    assert session(server, session_id)["state"] == "IDLE"
    assert session(server, session_id)["pending_action"] is None
    server.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "still there?"})
    server.wait_for_agent_text(session_id, "Received: still there?")
    # Never re-sent: the restarted agent was not asked again.
    assert len(permission_rows(server, session_id)) == 1


def test_a_decision_through_the_decision_link_reaches_the_waiting_agent_once(
    server: ServerProcess,
) -> None:
    _, session_id, message_id = _asking(server)
    page_url = str(permission(server, message_id)["decision_url"])
    assert page_url.startswith(f"{server.url}/p/"), page_url
    token = page_url.rsplit("/p/", 1)[1]
    page = httpx.get(page_url, timeout=30)
    assert page.status_code == 200 and "decision-page.js" in page.text
    assert page.headers["cache-control"] == "no-store"
    read = httpx.get(f"{server.url}/api/v1/p/{token}", timeout=30).json()
    assert read["state"] == "pending" and read["tool_call"]["title"] == "Edit README.md"

    decided = httpx.post(
        f"{server.url}/api/v1/p/{token}/respond", json={"option_id": "allow"}, timeout=30
    )

    assert decided.status_code == 200, decided.text
    assert decided.json()["decision"] == {
        "option_id": "allow",
        "kind": "allow_once",
        "decided_by": "user",
    }
    server.wait_for_agent_text(session_id, "Permission: allow")
    again = httpx.post(
        f"{server.url}/api/v1/p/{token}/respond", json={"option_id": "reject"}, timeout=30
    )
    assert again.status_code == 409
    assert again.json()["error"]["decision"]["option_id"] == "allow"
    assert permission(server, message_id)["decision_url"] is None
