"""Answer links over HTTP (the contract's section 17), on both databases: every active bundle
carries `answer_url`; `/api/v1/a/<token>` reads and answers that bundle exactly like
`/clarification/{pending_id}`; a forged, altered, expired or unknown token is 404 `not_found`
and writes nothing."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from clarion.domain.links import sign
from clarion.runtime import failpoints
from tests.lifecycle.harness import ASK_DB, SKIP, answer_db, detached_question
from tests.links.conftest import Linked


async def test_an_active_bundle_and_its_inbox_item_carry_an_absolute_answer_url(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    read = (await linked.http.get(f"/api/v1/clarification/{pending_id}")).json()
    assert read["answer_url"].startswith("https://clarion.example/a/")
    inbox = (await linked.http.get("/api/v1/inbox")).json()
    [item] = inbox["items"]
    assert item["answer_url"].startswith("https://clarion.example/a/")
    assert linked.life.app.services.links is not None
    assert linked.life.app.services.links.pending_of(linked.token_of(item["answer_url"])) == (
        pending_id
    )
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_the_link_reads_the_bundle_with_its_task_and_context(linked: Linked) -> None:
    svc = linked.life.app.services
    task = await svc.tasks.create(title="Pick a DB", description="A new service.", workspace=None)
    session = await svc.sessions.start(task.id, agent="builtin", prompt="go", is_primary=True)
    asked = {"context": "I am setting up a service.", **ASK_DB}
    call, pending_id = await linked.life.ask(session.id, asked)
    token = await linked.link_for(pending_id)
    read = await linked.http.get(f"/api/v1/a/{token}")
    assert read.status_code == 200, read.text
    body = read.json()
    plain = (await linked.http.get(f"/api/v1/clarification/{pending_id}")).json()
    for key in ("pending_id", "session_id", "task_id", "turn_id", "state", "questions", "context"):
        assert body[key] == plain[key], key
    assert body["state"] == "active_live"
    assert body["context"] == "I am setting up a service."
    assert body["task"] == {"id": task.id, "title": "Pick a DB", "description": "A new service."}
    assert body["response"] is None
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_answering_through_the_link_reaches_the_live_waiter_and_a_second_gets_409(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    token = await linked.link_for(pending_id)

    first = await linked.http.post(f"/api/v1/a/{token}/respond", json=answer_db("sqlite"))
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "answered"
    assert '"sqlite"' in await asyncio.wait_for(call, 5)

    second = await linked.http.post(f"/api/v1/a/{token}/respond", json=answer_db("postgres"))
    assert second.status_code == 409, second.text
    error = second.json()["error"]
    assert error["code"] == "not_active" and error["retryable"] is False
    assert error["response"]["answers"][0]["selected_options"] == ["sqlite"]

    # The page reads the winner afterwards, and the bundle no longer offers a link.
    read = (await linked.http.get(f"/api/v1/a/{token}")).json()
    assert read["state"] not in ("active_live", "active_detached")
    assert read["response"]["answers"][0]["selected_options"] == ["sqlite"]
    assert read["answer_url"] is None
    plain = (await linked.http.get(f"/api/v1/clarification/{pending_id}")).json()
    assert plain["answer_url"] is None


async def test_a_detached_answer_through_the_link_resumes_the_agent(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    pending_id = await detached_question(linked.life, session_id)
    token = await linked.link_for(pending_id)
    response = await linked.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
    assert response.status_code == 200, response.text
    assert response.json()["resumed"] is True
    prompts = await linked.life.runtime.wait_for_prompts(2)
    assert prompts[-1][1].startswith("You previously asked the user:")


async def test_a_skip_through_the_link_is_a_rejection(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    token = await linked.link_for(pending_id)
    response = await linked.http.post(f"/api/v1/a/{token}/respond", json=SKIP)
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert '"rejected": true' in await asyncio.wait_for(call, 5)


async def test_a_bad_body_through_the_link_is_400_and_writes_nothing(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    token = await linked.link_for(pending_id)
    before = await linked.rows(pending_id)
    bad = {"answers": [{"question_id": "db", "selected_options": ["oracle"]}]}
    response = await linked.http.post(f"/api/v1/a/{token}/respond", json=bad)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_response"
    assert response.json()["error"]["field"] == "answers[0].selected_options[0]"
    not_json = await linked.http.post(f"/api/v1/a/{token}/respond", content=b"{")
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_json"
    assert await linked.rows(pending_id) == before
    assert await linked.life.state(pending_id) == "active_live"
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_a_retryable_failure_through_the_link_leaves_the_question_answerable(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    pending_id = await detached_question(linked.life, session_id)
    token = await linked.link_for(pending_id)
    failpoints.configure("resume.dispatch=error")
    failed = await linked.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
    assert failed.status_code == 500, failed.text
    assert failed.json()["error"]["retryable"] is True
    assert await linked.life.state(pending_id) == "active_detached"
    failpoints.configure("")
    again = await linked.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
    assert again.status_code == 200, again.text


async def test_forged_altered_expired_and_unknown_tokens_are_404_and_write_nothing(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    token = await linked.link_for(pending_id)
    links = linked.life.app.services.links
    assert links is not None
    payload, mac = token.split(".")
    forged = sign(b"not the server's key", pending_id, linked.clock.now() + timedelta(days=1))
    unknown = links.token_for("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
    altered = f"{payload}.{mac[:-2]}{'AA' if mac[-2:] != 'AA' else 'BB'}"
    before = await linked.rows(pending_id)
    for bad in (forged, unknown, altered, "garbage", payload):
        read = await linked.http.get(f"/api/v1/a/{bad}")
        assert read.status_code == 404, bad
        assert read.json()["error"]["code"] == "not_found"
        posted = await linked.http.post(f"/api/v1/a/{bad}/respond", json=answer_db())
        assert posted.status_code == 404, bad
        assert posted.json()["error"] == {
            "code": "not_found",
            "message": posted.json()["error"]["message"],
            "retryable": False,
        }
    assert await linked.rows(pending_id) == before
    assert await linked.life.state(pending_id) == "active_live"

    # The same genuine token, once its time is up (7 days by default).
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_an_expired_token_is_404_and_writes_nothing(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    pending_id = await detached_question(linked.life, session_id)
    token = await linked.link_for(pending_id)
    before = await linked.rows(pending_id)
    # The same genuine token, once its time is up (7 days by default).
    linked.clock.advance(7 * 24 * 3600)
    expired = await linked.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
    assert expired.status_code == 404
    assert expired.json()["error"]["code"] == "not_found"
    assert (await linked.http.get(f"/api/v1/a/{token}")).status_code == 404
    assert (await linked.http.get(f"/a/{token}")).status_code == 404
    assert await linked.rows(pending_id) == before
    assert await linked.life.state(pending_id) == "active_detached"


async def test_the_page_is_served_for_a_good_token_and_a_clear_404_for_a_bad_one(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    token = await linked.link_for(pending_id)
    page = await linked.http.get(f"/a/{token}")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "/static/js/answer-page.js" in page.text
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store"
    bad = await linked.http.get(f"/a/{token[:-3]}xyz")
    assert bad.status_code == 404
    assert "This answer link is not valid" in bad.text
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_a_trailing_slash_after_the_token_is_404_not_a_redirect_to_it(
    linked: Linked,
) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    token = await linked.link_for(pending_id)
    for method, path in (
        ("GET", f"/api/v1/a/{token}/"),
        ("POST", f"/api/v1/a/{token}/respond/"),
        ("GET", f"/api/v1/a/{token}/anything"),
    ):
        response = await linked.http.request(method, path, json=answer_db("sqlite"))
        assert response.status_code == 404, (method, path, response.status_code)
        assert "location" not in response.headers
        assert response.json()["error"]["code"] == "not_found"
        assert response.headers["cache-control"] == "no-store"
    page = await linked.http.get(f"/a/{token}/")
    assert page.status_code == 404 and "location" not in page.headers
    assert (await linked.life.store.find_bundle(pending_id)) is not None
    assert (await linked.http.get(f"/api/v1/clarification/{pending_id}")).json()["state"] == (
        "active_live"
    )
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_the_json_read_of_a_link_is_never_stored_by_a_cache(linked: Linked) -> None:
    _, session_id = await linked.life.start_session()
    call, pending_id = await linked.life.ask(session_id)
    token = await linked.link_for(pending_id)
    read = await linked.http.get(f"/api/v1/a/{token}")
    assert read.status_code == 200
    assert read.headers["cache-control"] == "no-store"
    assert read.headers["referrer-policy"] == "no-referrer"
    answered = await linked.http.post(f"/api/v1/a/{token}/respond", json=answer_db("sqlite"))
    assert answered.headers["cache-control"] == "no-store"
    refused = await linked.http.get("/api/v1/a/not-a-token")
    assert refused.status_code == 404
    assert refused.headers["cache-control"] == "no-store"
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
