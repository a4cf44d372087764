"""Decision links for permission requests over HTTP, on both databases: a pending request
carries `decision_url`; `/api/v1/p/<token>` reads and decides that request exactly like
`/permission/{message_id}` (one decision wins, the loser gets 409 with the winner); a forged,
altered, expired or unknown token, or a question's answer token, is 404 `not_found` and writes
nothing; a decision token never answers a question."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from clarion.domain.links import DECISION, sign
from clarion.orchestrator.access import hash_token
from clarion.ports import PermissionAsk
from clarion.runtime.clock import ManualClock
from tests.lifecycle.harness import answer_db
from tests.links.conftest import Linked, linked_app, settings_on

OPTIONS = (
    ("allow", "Allow", "allow_once"),
    ("allow-always", "Always allow", "allow_always"),
    ("reject", "Reject", "reject_once"),
)
ALICE = "alice-token-0123456789abcdef0123456789"


async def _asked(rig: Linked, session_id: str, call: str = "c1") -> tuple[asyncio.Task[Any], str]:
    """The agent's permission request, still waiting, and its row's id once it is written."""
    life = rig.life
    ask = PermissionAsk(
        session_id, call, "Execute `make test`", "execute", {"command": "make test"}, OPTIONS
    )
    waiting = asyncio.create_task(life.runtime.sink.on_permission(ask))
    event = await life.wait_for_event(
        "session.message.added",
        lambda e: (
            e.payload.get("type") == "permission_request"
            and e.payload["metadata"]["tool_call"]["tool_call_id"] == call
        ),
    )
    return waiting, str(event.payload["id"])


async def _token(rig: Linked, message_id: str) -> str:
    read = await rig.http.get(f"/api/v1/permission/{message_id}", headers=rig.admin)
    assert read.status_code == 200, read.text
    url = read.json()["decision_url"]
    assert url.startswith("https://clarion.example/p/"), url
    return str(url.rsplit("/p/", 1)[1])


async def _metadata(rig: Linked, message_id: str) -> dict[str, Any]:
    return dict((await rig.life.store.get_message(message_id)).metadata)


async def _stop(waiting: asyncio.Task[Any]) -> None:
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiting


async def test_a_pending_request_and_its_inbox_item_carry_a_decision_url(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    waiting, message_id = await _asked(linked, session_id)
    token = await _token(linked, message_id)
    links = linked.life.app.services.links
    assert links is not None and links.message_of(token) == message_id
    [item] = (await linked.http.get("/api/v1/inbox")).json()["items"]
    assert item["kind"] == "permission"
    assert item["decision_url"] == f"https://clarion.example/p/{token}"
    await _stop(waiting)


async def test_the_link_reads_the_request_with_its_task(linked: Linked) -> None:
    svc = linked.life.app.services
    task = await svc.tasks.create(title="Ship it", description="**Careful**", workspace=None)
    session = await svc.sessions.start(task.id, agent="builtin", prompt="go", is_primary=True)
    waiting, message_id = await _asked(linked, session.id)
    token = await _token(linked, message_id)
    read = await linked.http.get(f"/api/v1/p/{token}")
    assert read.status_code == 200, read.text
    assert read.headers["cache-control"] == "no-store"
    body = read.json()
    plain = (await linked.http.get(f"/api/v1/permission/{message_id}")).json()
    for key in ("message_id", "session_id", "task_id", "state", "tool_call", "options"):
        assert body[key] == plain[key], key
    assert body["state"] == "pending" and body["decision"] is None
    assert body["tool_call"]["raw_input"] == {"command": "make test"}
    assert body["task"] == {"id": task.id, "title": "Ship it", "description": "**Careful**"}
    await _stop(waiting)


async def test_deciding_through_the_link_reaches_the_agent_and_a_second_gets_409(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    waiting, message_id = await _asked(linked, session_id)
    token = await _token(linked, message_id)

    first = await linked.http.post(f"/api/v1/p/{token}/respond", json={"option_id": "allow"})
    assert first.status_code == 200, first.text
    assert first.json() == {
        "success": True,
        "state": "approved",
        "decision": {"option_id": "allow", "kind": "allow_once", "decided_by": "user"},
        "delivered": True,
    }
    assert await asyncio.wait_for(waiting, 5) == "allow"

    second = await linked.http.post(f"/api/v1/p/{token}/respond", json={"option_id": "reject"})
    assert second.status_code == 409, second.text
    error = second.json()["error"]
    assert error["code"] == "not_active" and error["retryable"] is False
    assert error["state"] == "approved" and error["decision"]["option_id"] == "allow"
    read = (await linked.http.get(f"/api/v1/p/{token}")).json()
    assert read["state"] == "approved"
    assert read["decision"] == {"option_id": "allow", "kind": "allow_once", "decided_by": "user"}
    plain = (await linked.http.get(f"/api/v1/permission/{message_id}")).json()
    assert plain["decision_url"] is None


async def test_the_link_and_the_web_ui_racing_to_decide_have_exactly_one_winner(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    for round_no in range(5):
        waiting, message_id = await _asked(linked, session_id, f"race{round_no}")
        token = await _token(linked, message_id)
        by_link, by_ui = await asyncio.gather(
            linked.http.post(f"/api/v1/p/{token}/respond", json={"option_id": "allow"}),
            linked.http.post(
                f"/api/v1/permission/{message_id}/respond", json={"option_id": "reject"}
            ),
        )
        statuses = sorted([by_link.status_code, by_ui.status_code])
        assert statuses == [200, 409], (by_link.text, by_ui.text)
        winner = by_link if by_link.status_code == 200 else by_ui
        loser = by_ui if winner is by_link else by_link
        chosen = winner.json()["decision"]["option_id"]
        assert loser.json()["error"]["decision"]["option_id"] == chosen
        assert await asyncio.wait_for(waiting, 5) == chosen
        assert (await _metadata(linked, message_id))["decision"]["option_id"] == chosen


async def test_a_bad_decision_through_the_link_is_400_and_writes_nothing(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    waiting, message_id = await _asked(linked, session_id)
    token = await _token(linked, message_id)
    before = await _metadata(linked, message_id)
    unknown = await linked.http.post(f"/api/v1/p/{token}/respond", json={"option_id": "maybe"})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["code"] == "invalid_response"
    assert unknown.json()["error"]["field"] == "option_id"
    not_json = await linked.http.post(f"/api/v1/p/{token}/respond", content=b"{")
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_json"
    assert await _metadata(linked, message_id) == before
    assert not waiting.done()
    await _stop(waiting)


async def test_forged_altered_unknown_and_question_tokens_are_404_and_write_nothing(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    waiting, message_id = await _asked(linked, session_id)
    token = await _token(linked, message_id)
    links = linked.life.app.services.links
    assert links is not None
    payload, mac = token.split(".")
    forged = sign(b"not the server's key", message_id, linked.clock.now() + timedelta(1), DECISION)
    unknown = links.token_for("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", DECISION)
    altered = f"{payload}.{mac[:-2]}{'AA' if mac[-2:] != 'AA' else 'BB'}"
    # An answer link's token for the same id: signed by this server, for the other purpose.
    as_question = links.token_for(message_id)
    before = await _metadata(linked, message_id)
    for bad in (forged, unknown, altered, as_question, "garbage", payload):
        read = await linked.http.get(f"/api/v1/p/{bad}")
        assert read.status_code == 404, bad
        assert read.json()["error"]["code"] == "not_found"
        assert read.headers["cache-control"] == "no-store"
        posted = await linked.http.post(f"/api/v1/p/{bad}/respond", json={"option_id": "allow"})
        assert posted.status_code == 404, bad
        assert posted.json()["error"] == {
            "code": "not_found",
            "message": posted.json()["error"]["message"],
            "retryable": False,
        }
        page = await linked.http.get(f"/p/{bad}")
        assert page.status_code == 404 and "This decision link is not valid" in page.text
    assert await _metadata(linked, message_id) == before
    assert not waiting.done()
    await _stop(waiting)


async def test_a_decision_token_never_answers_a_question(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    links = linked.life.app.services.links
    assert links is not None
    decision_token = links.token_for(pending_id, DECISION)
    read = await linked.http.get(f"/api/v1/a/{decision_token}")
    assert read.status_code == 404
    posted = await linked.http.post(f"/api/v1/a/{decision_token}/respond", json=answer_db())
    assert posted.status_code == 404
    # Nor does a decision link on a question's id decide (or read) the question.
    on_p = await linked.http.post(f"/api/v1/p/{decision_token}/respond", json={"option_id": "x"})
    assert on_p.status_code == 404
    assert await linked.life.state(pending_id) == "active_live"
    await _stop(call)


async def test_an_expired_decision_token_is_404_and_writes_nothing(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    waiting, message_id = await _asked(linked, session_id)
    token = await _token(linked, message_id)
    before = await _metadata(linked, message_id)
    linked.clock.advance(7 * 24 * 3600)  # the answer link's default lifetime
    expired = await linked.http.post(f"/api/v1/p/{token}/respond", json={"option_id": "allow"})
    assert expired.status_code == 404 and expired.json()["error"]["code"] == "not_found"
    assert (await linked.http.get(f"/api/v1/p/{token}")).status_code == 404
    assert (await linked.http.get(f"/p/{token}")).status_code == 404
    assert await _metadata(linked, message_id) == before
    await _stop(waiting)


async def test_the_page_is_served_private_and_a_trailing_slash_is_404(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    waiting, message_id = await _asked(linked, session_id)
    token = await _token(linked, message_id)
    page = await linked.http.get(f"/p/{token}")
    assert page.status_code == 200
    assert "/static/js/decision-page.js" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    for method, path in (
        ("GET", f"/api/v1/p/{token}/"),
        ("POST", f"/api/v1/p/{token}/respond/"),
        ("GET", f"/api/v1/p/{token}/anything"),
        ("GET", f"/p/{token}/"),
    ):
        response = await linked.http.request(method, path, json={"option_id": "allow"})
        assert response.status_code == 404, (method, path, response.status_code)
        assert "location" not in response.headers
    assert not waiting.done()
    await _stop(waiting)


@pytest.fixture
async def guarded(store_url: str, clock: ManualClock) -> AsyncIterator[Linked]:
    settings = settings_on(store_url, auth=True, public_url="https://clarion.example")
    async with linked_app(settings, clock) as rig:
        await rig.life.store.issue_api_token(
            user="alice", workspace="alpha", token_hash=hash_token(ALICE)
        )
        rig.admin = {"Authorization": f"Bearer {ALICE}"}
        yield rig


async def test_with_access_control_on_the_link_decides_its_request_and_nothing_else(
    guarded: Linked,
) -> None:
    svc = guarded.life.app.services
    task = await svc.tasks.create(title="mine", description="", workspace="alpha")
    session = await svc.sessions.start(task.id, agent="builtin", prompt="go", is_primary=True)
    waiting, message_id = await _asked(guarded, session.id)
    token = await _token(guarded, message_id)
    assert (await guarded.http.get(f"/api/v1/permission/{message_id}")).status_code == 401
    bearer = {"Authorization": f"Bearer {token}"}
    for path in (f"/api/v1/permission/{message_id}", "/api/v1/inbox", "/api/v1/tasks"):
        assert (await guarded.http.get(path, headers=bearer)).status_code == 401, path
    assert (await guarded.http.get(f"/p/{token}")).status_code == 200
    decided = await guarded.http.post(f"/api/v1/p/{token}/respond", json={"option_id": "reject"})
    assert decided.status_code == 200, decided.text
    assert decided.json()["state"] == "rejected"
    assert await asyncio.wait_for(waiting, 5) == "reject"
