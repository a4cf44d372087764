"""Two users in two workspaces on one `clarion serve --auth`: each sees and answers only their own.

Alice (workspace `alpha`) owns a task with a live and a detached clarification; Bob
(workspace `beta`) tries every route, the WebSocket and the bundle calls against her ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.auth.conftest import Team
from tests.e2e.harness import SKIP, ServerProcess, answer, recv_until

pytestmark = pytest.mark.e2e

MISSING = "00000000-0000-7000-8000-000000000000"


@dataclass
class AliceWorld:
    task_id: str
    live_session: str
    live_pending: str
    detached_session: str
    detached_pending: str
    message_id: str


@pytest.fixture(scope="module")
def world(team: Team) -> AliceWorld:
    alice = team.alice
    task_id = alice.create_task("Alice's task")
    live_session = alice.start_session(task_id, "/scenario ask")
    live_pending = alice.wait_for_bundle(live_session)
    alice.wait_for_state(live_pending, "active_live")
    detached_session = alice.start_session(task_id, "/scenario ask-timeout t=1")
    detached_pending = alice.wait_for_bundle(detached_session)
    alice.wait_for_agent_text(detached_session, "No answer yet")
    alice.wait_for_state(detached_pending, "active_detached")
    return AliceWorld(
        task_id=task_id,
        live_session=live_session,
        live_pending=live_pending,
        detached_session=detached_session,
        detached_pending=detached_pending,
        message_id=alice.messages(live_session)[0]["id"],
    )


def routes(task: str, session: str, message: str, pending: str) -> list[tuple[str, str, Any]]:
    """Every HTTP route that names a task, session, message or bundle, with a valid body."""
    return [
        ("GET", f"/tasks/{task}", None),
        ("POST", f"/tasks/{task}/move", {"step": "done"}),
        ("POST", f"/tasks/{task}/task-sessions", {"agent": "builtin", "prompt": "hi"}),
        ("GET", f"/tasks/{task}/task-sessions", None),
        ("GET", f"/tasks/{task}/sessions", None),
        ("GET", f"/task-sessions/{session}", None),
        ("POST", f"/task-sessions/{session}/prompt", {"text": "hi"}),
        ("POST", f"/task-sessions/{session}/cancel", None),
        ("POST", f"/task-sessions/{session}/finish", {"state": "cancelled"}),
        ("GET", f"/task-sessions/{session}/turns", None),
        ("GET", f"/task-sessions/{session}/messages", None),
        ("DELETE", f"/task-sessions/{session}/messages/{message}", None),
        ("GET", f"/clarification/{pending}", None),
        ("POST", f"/clarification/{pending}/respond", answer("db", "postgres")),
        ("POST", f"/clarification/{pending}/cancel", None),
    ]


def snapshot(alice: ServerProcess, world: AliceWorld) -> dict[str, Any]:
    """What a refused request must not change: steps, sessions, transcripts, turns, bundles."""
    task = alice.ok("GET", f"/tasks/{world.task_id}")["task"]
    sessions = alice.ok("GET", f"/tasks/{world.task_id}/task-sessions")["sessions"]
    return {
        "step": task["workflow_step"],
        "sessions": sorted((s["id"], s["state"]) for s in sessions),
        "messages": {
            s: [m["id"] for m in alice.messages(s)]
            for s in (world.live_session, world.detached_session)
        },
        "turns": {
            s: [t["id"] for t in alice.turns(s)]
            for s in (world.live_session, world.detached_session)
        },
        "bundles": {
            p: alice.bundle(p)["state"] for p in (world.live_pending, world.detached_pending)
        },
    }


# ------------------------------------------------------------------ authentication


def test_requests_without_or_with_a_wrong_token_are_401_and_write_nothing(team: Team) -> None:
    before = team.alice.ok("GET", "/tasks")["total"]
    for headers in (
        {},
        {"Authorization": "Bearer not-a-real-token"},
        {"Authorization": f"Basic {team.alice_token}"},
        {"Authorization": "Bearer"},
    ):
        for method, path in (("GET", "/tasks"), ("POST", "/tasks"), ("GET", "/boot")):
            response = httpx.request(
                method,
                f"{team.server.url}/api/v1{path}",
                headers=headers,
                json={"title": "sneaky"},
                timeout=10,
            )
            assert response.status_code == 401, (headers, path, response.text)
            assert response.json()["error"]["code"] == "unauthenticated"
            assert response.json()["error"]["retryable"] is False
            assert response.headers["www-authenticate"] == "Bearer"
    assert team.alice.ok("GET", "/tasks")["total"] == before


def test_healthz_and_the_web_ui_need_no_token(team: Team) -> None:
    assert httpx.get(f"{team.server.url}/healthz", timeout=10).status_code == 200
    page = httpx.get(f"{team.server.url}/", timeout=10)
    assert page.status_code == 200 and "html" in page.headers["content-type"]


def test_login_sets_an_http_only_strict_cookie_that_authenticates(
    team: Team, world: AliceWorld
) -> None:
    refused = httpx.post(f"{team.server.url}/api/v1/login", json={"token": "wrong"}, timeout=10)
    assert refused.status_code == 401 and "set-cookie" not in refused.headers

    with httpx.Client(base_url=f"{team.server.url}/api/v1", timeout=10) as browser:
        login = browser.post("/login", json={"token": team.alice_token})
        assert login.status_code == 200, login.text
        assert login.json()["user"] == "alice" and login.json()["workspaces"] == ["alpha"]
        cookie = login.headers["set-cookie"].lower()
        assert "clarion_token=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
        ids = [t["id"] for t in browser.get("/tasks").json()["tasks"]]
        assert world.task_id in ids

        assert browser.post("/logout").status_code == 200
        assert browser.get("/tasks").status_code == 401


# ------------------------------------------------------------------ lists


def test_lists_show_each_user_only_their_own_workspace(team: Team, world: AliceWorld) -> None:
    bob_task = team.bob.create_task("Bob's task")
    for user, own, other in (
        (team.alice, world.task_id, bob_task),
        (team.bob, bob_task, world.task_id),
    ):
        listed = [t["id"] for t in user.ok("GET", "/tasks")["tasks"]]
        booted = [t["id"] for t in user.ok("GET", "/boot")["tasks"]]
        board = [
            t["id"] for step in user.ok("GET", "/workflow/snapshot")["steps"] for t in step["tasks"]
        ]
        for ids in (listed, booted, board):
            assert own in ids and other not in ids
    assert team.bob.ok("GET", f"/tasks/{bob_task}")["task"]["workspace"] == "beta"


def test_the_inbox_lists_only_the_callers_own_waiting_questions(
    team: Team, world: AliceWorld
) -> None:
    mine = {(i["kind"], i["id"]) for i in team.alice.ok("GET", "/inbox")["items"]}
    assert mine == {
        ("clarification", world.live_pending),
        ("clarification", world.detached_pending),
    }
    theirs = team.bob.ok("GET", "/inbox")
    assert theirs == {"items": [], "total": 0}


def test_creating_a_task_in_a_workspace_the_caller_is_not_in_is_404_and_creates_nothing(
    team: Team,
) -> None:
    before = team.alice.ok("GET", "/tasks")["total"], team.bob.ok("GET", "/tasks")["total"]

    for workspace in ("alpha", "nowhere"):
        response = team.bob.request("POST", "/tasks", json={"title": "x", "workspace": workspace})
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == "not_found"

    assert (
        team.alice.ok("GET", "/tasks")["total"],
        team.bob.ok("GET", "/tasks")["total"],
    ) == before
    own = team.bob.ok("POST", "/tasks", 201, json={"title": "y", "workspace": "beta"})
    assert own["task"]["workspace"] == "beta"


# ------------------------------------------------------------------ every route


def test_every_route_answers_404_for_the_other_users_things_like_missing_ones(
    team: Team, world: AliceWorld
) -> None:
    before = snapshot(team.alice, world)
    foreign = routes(world.task_id, world.live_session, world.message_id, world.live_pending)
    missing = routes(MISSING, MISSING, MISSING, MISSING)

    for (method, path, body), (_, missing_path, _) in zip(foreign, missing, strict=True):
        refused = team.bob.request(method, path, json=body)
        absent = team.bob.request(method, missing_path, json=body)
        assert refused.status_code == 404, (method, path, refused.text)
        # Indistinguishable from a thing that does not exist.
        assert refused.json() == absent.json(), (method, path)

    assert snapshot(team.alice, world) == before


def test_the_other_users_detached_bundle_routes_are_404_too(team: Team, world: AliceWorld) -> None:
    for method, path, body in routes(
        world.task_id, world.detached_session, world.message_id, world.detached_pending
    )[5:]:
        assert team.bob.request(method, path, json=body).status_code == 404, (method, path)


def test_a_respond_from_the_wrong_user_changes_nothing_and_resumes_nothing(
    team: Team, world: AliceWorld
) -> None:
    before = snapshot(team.alice, world)

    for body in (answer("db", "mongodb"), SKIP):
        response = team.bob.respond(world.detached_pending, body)
        assert response.status_code == 404, response.text

    assert snapshot(team.alice, world) == before
    assert team.alice.bundle(world.detached_pending)["state"] == "active_detached"
    assert not any(
        "You previously asked" in t for t in team.alice.agent_texts(world.detached_session)
    )

    # The owner's answer still works, so the refusal above was about the caller, not the bundle.
    own = team.alice.respond(world.detached_pending, answer("db", "mongodb"))
    assert own.status_code == 200, own.text
    assert own.json()["resumed"] is True
    team.alice.wait_for_agent_text(world.detached_session, "You previously asked")


# ------------------------------------------------------------------ WebSocket


@pytest.fixture
def bob_ws(team: Team) -> Iterator[ClientConnection]:
    with team.bob.websocket() as ws:
        yield ws


def request(ws: ClientConnection, id_: str, action: str, payload: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps({"type": "request", "id": id_, "action": action, "payload": payload}))
    return recv_until(ws, lambda m: m.get("id") == id_)


def test_websocket_handshake_without_a_valid_token_is_an_http_401(team: Team) -> None:
    base = f"ws://127.0.0.1:{team.server.port}/api/v1/ws"
    for url, headers in (
        (base, None),
        (f"{base}?token=wrong", None),
        (base, {"Authorization": "Bearer wrong"}),
    ):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers=headers).close()
        assert refused.value.response.status_code == 401, url


def test_websocket_accepts_the_token_as_a_query_parameter(team: Team) -> None:
    url = f"ws://127.0.0.1:{team.server.port}/api/v1/ws?token={team.alice_token}"
    with connect(url) as ws:
        assert request(ws, "p", "ping", {})["payload"] == {"pong": True}


def test_websocket_refuses_subscriptions_and_lists_of_the_other_users_things(
    bob_ws: ClientConnection, world: AliceWorld
) -> None:
    for id_, action, payload in (
        ("t", "subscribe", {"task_id": world.task_id}),
        ("tt", "task.subscribe", {"task_id": world.task_id}),
        ("s", "session.subscribe", {"session_id": world.live_session}),
        ("l", "session.list", {"task_id": world.task_id}),
    ):
        reply = request(bob_ws, id_, action, payload)
        assert reply["type"] == "error", reply
        assert reply["payload"]["code"] == "not_found"

    # The refused subscriptions left no filter behind.
    widened = request(bob_ws, "u", "unsubscribe", {})
    assert widened["payload"]["task_ids"] == [] and widened["payload"]["session_ids"] == []


def test_websocket_delivers_only_notifications_of_visible_tasks(
    team: Team, bob_ws: ClientConnection
) -> None:
    with team.alice.websocket() as alice_ws:
        alice_task = team.alice.create_task("Alice's secret")
        session_id = team.alice.start_session(alice_task, "/scenario echo private")
        # Alice's own socket saw the agent's reply, so every event of it is on the bus now.
        recv_until(
            alice_ws,
            lambda m: (
                m["action"].startswith("session.message.")
                and m["payload"].get("session_id") == session_id
                and "echo: private" in str(m["payload"].get("content"))
            ),
        )
    bob_task = team.bob.create_task("Bob's marker")

    seen: list[dict[str, Any]] = []

    def collect(message: dict[str, Any]) -> bool:
        seen.append(message)
        return message["action"] == "task.created" and bob_task in json.dumps(message["payload"])

    recv_until(bob_ws, collect)
    assert not any(alice_task in json.dumps(m) or session_id in json.dumps(m) for m in seen)


# ------------------------------------------------------------------ MCP and logs


def test_mcp_endpoint_refuses_a_missing_or_wrong_secret(team: Team, world: AliceWorld) -> None:
    def state() -> tuple[list[str], str]:
        messages = [m["id"] for m in team.alice.messages(world.live_session)]
        return messages, team.alice.bundle(world.live_pending)["state"]

    before = state()
    url = f"{team.server.url}/mcp/sessions/{world.live_session}"
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask_user_question", "arguments": {"questions": []}},
    }
    for headers in (
        {},
        {"X-Clarion-Token": "wrong"},
        {"X-Clarion-Token": team.alice_token},  # an API token is not the session's secret
        {"Authorization": f"Bearer {team.alice_token}"},
    ):
        response = httpx.post(
            url,
            json=call,
            headers={**headers, "Accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert response.status_code == 401, headers
        assert response.json()["error"]["code"] == "unauthenticated"
    assert state() == before


def test_tokens_never_appear_in_the_server_log(team: Team, world: AliceWorld) -> None:
    # Refusals of its own, so the test stands alone when the module's tests are spread over
    # workers: an API token offered as the MCP secret, and one offered for another's task.
    refused = httpx.post(
        f"{team.server.url}/mcp/sessions/{world.live_session}",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"X-Clarion-Token": team.bob_token, "Accept": "application/json"},
        timeout=10,
    )
    assert refused.status_code == 401
    assert team.bob.request("GET", f"/tasks/{world.task_id}").status_code in (403, 404)
    logs = team.server.logs()
    assert "request refused" in logs  # the refusals were logged ...
    assert team.alice_token not in logs and team.bob_token not in logs  # ... without tokens
