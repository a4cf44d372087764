"""Answer links with access control on: the link needs no other credential, and grants its one
bundle only: not another bundle, not any other route, not the WebSocket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from clarion.orchestrator.access import hash_token
from clarion.runtime.clock import ManualClock
from tests.lifecycle.harness import answer_db
from tests.links.conftest import Linked, linked_app, settings_on

ALICE = "alice-token-0123456789abcdef0123456789"


@pytest.fixture
async def guarded(store_url: str, clock: ManualClock) -> AsyncIterator[Linked]:
    async with linked_app(settings_on(store_url, auth=True), clock) as rig:
        await rig.life.store.issue_api_token(
            user="alice", workspace="alpha", token_hash=hash_token(ALICE)
        )
        rig.admin = {"Authorization": f"Bearer {ALICE}"}
        yield rig


async def _question(rig: Linked, title: str) -> tuple[str, str, asyncio.Task[str]]:
    svc = rig.life.app.services
    task = await svc.tasks.create(title=title, description="", workspace="alpha")
    session = await svc.sessions.start(task.id, agent="builtin", prompt="go", is_primary=True)
    call, pending_id = await rig.life.ask(session.id)
    return pending_id, task.id, call


async def test_a_link_answers_its_bundle_without_any_other_credential(guarded: Linked) -> None:
    pending_id, _, call = await _question(guarded, "mine")
    token = await guarded.link_for(pending_id)
    assert (await guarded.http.get(f"/api/v1/clarification/{pending_id}")).status_code == 401
    read = await guarded.http.get(f"/api/v1/a/{token}")
    assert read.status_code == 200 and read.json()["pending_id"] == pending_id
    assert (await guarded.http.get(f"/a/{token}")).status_code == 200
    answered = await guarded.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
    assert answered.status_code == 200, answered.text
    await asyncio.wait_for(call, 5)


async def test_a_link_grants_nothing_but_its_own_bundle(guarded: Linked) -> None:
    mine, task_id, call_mine = await _question(guarded, "mine")
    other, _, call_other = await _question(guarded, "other")
    token = await guarded.link_for(mine)
    bearer = {"Authorization": f"Bearer {token}"}
    cookie = {"Cookie": f"clarion_token={token}"}
    for headers in (bearer, cookie):
        for path in (
            f"/api/v1/clarification/{other}",
            f"/api/v1/clarification/{mine}",
            "/api/v1/inbox",
            "/api/v1/tasks",
            f"/api/v1/tasks/{task_id}",
        ):
            response = await guarded.http.get(path, headers=headers)
            assert response.status_code == 401, (path, headers)
        posted = await guarded.http.post(
            f"/api/v1/clarification/{other}/respond", json=answer_db(), headers=headers
        )
        assert posted.status_code == 401
    # Paths that only look like the link's: nothing under it but the read and respond.
    for method, path in (
        ("POST", f"/api/v1/a/{token}/cancel"),
        ("POST", f"/api/v1/a/{token}/resend"),
        ("GET", f"/api/v1/a/{token}/respond"),
        ("POST", f"/api/v1/a/{token}/../../clarification/{other}/respond"),
    ):
        response = await guarded.http.request(method, path, json=answer_db())
        assert response.status_code in (401, 404, 405), (method, path, response.status_code)
    assert (await guarded.http.post("/api/v1/login", json={"token": token})).status_code == 401

    # Answering through the link answers its own bundle and leaves the other waiting.
    answered = await guarded.http.post(f"/api/v1/a/{token}/respond", json=answer_db())
    assert answered.status_code == 200
    assert answered.json()["response"]["pending_id"] == mine
    assert await guarded.life.state(other) == "active_live"
    await asyncio.wait_for(call_mine, 5)
    call_other.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call_other
