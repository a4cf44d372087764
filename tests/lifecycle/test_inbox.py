"""The inbox read (`GET /inbox`): every item a person may act on now, by the pending rule, on
both databases, through the real services and over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from clarion.ports import PermissionAsk
from tests.lifecycle.harness import ASK_DB, Lifecycle, answer_db, detached_question
from tests.projection.served import serving

OPTIONS = (("allow", "Allow", "allow_once"), ("reject", "Reject", "reject_once"))


async def _permission(life: Lifecycle, session_id: str) -> tuple[asyncio.Task[str | None], str]:
    ask = PermissionAsk(session_id, "c1", "Edit README.md", "edit", {"path": "README.md"}, OPTIONS)
    waiting = asyncio.create_task(life.runtime.sink.on_permission(ask))
    event = await life.wait_for_event(
        "session.message.added", lambda e: e.payload.get("type") == "permission_request"
    )
    return waiting, str(event.payload["id"])


async def _stop(call: asyncio.Task[object]) -> None:
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call


async def test_an_empty_server_has_an_empty_inbox(life: Lifecycle) -> None:
    await life.start_session()
    assert await life.app.services.reads.inbox(None) == {"items": [], "total": 0}


async def test_questions_and_permission_requests_are_listed_oldest_first_with_what_answers_them(
    life: Lifecycle,
) -> None:
    task_id, asking = await life.start_session()
    _, permitting = await life.start_session()
    call, pending_id = await life.ask(asking)
    waiting, message_id = await _permission(life, permitting)
    try:
        inbox = await life.app.services.reads.inbox(None)

        assert inbox["total"] == 2
        question, permission = inbox["items"]
        assert question["kind"] == "clarification" and question["id"] == pending_id
        assert question["task"] == {"id": task_id, "title": "t"}
        assert question["session_id"] == asking and question["state"] == "active_live"
        assert [q["id"] for q in question["questions"]] == ["db"]
        assert question["questions"][0]["options"][0]["option_id"] == "postgres"
        assert "tool_call" not in question and "options" not in question
        assert permission["kind"] == "permission" and permission["id"] == message_id
        assert permission["session_id"] == permitting and permission["state"] == "pending"
        assert permission["tool_call"]["title"] == "Edit README.md"
        assert [o["option_id"] for o in permission["options"]] == ["allow", "reject"]
        assert "questions" not in permission
        assert question["created_at"] <= permission["created_at"]
    finally:
        await _stop(call)
        await _stop(waiting)


async def test_answered_decided_and_finished_items_leave_the_inbox(life: Lifecycle) -> None:
    _, asking = await life.start_session()
    _, permitting = await life.start_session()
    _, finishing = await life.start_session()
    call, pending_id = await life.ask(asking)
    waiting, message_id = await _permission(life, permitting)
    ended, _ = await life.ask(finishing)
    reads = life.app.services.reads
    assert (await reads.inbox(None))["total"] == 3

    await life.app.services.resolver.respond(pending_id, answer_db())
    await life.app.services.permissions.respond(message_id, {"option_id": "allow"})
    await life.app.services.sessions.finish(finishing, "completed")

    assert await reads.inbox(None) == {"items": [], "total": 0}
    assert await asyncio.wait_for(waiting, 5) == "allow"
    await _stop(call)
    await _stop(ended)


async def test_a_detached_question_is_listed_until_a_new_turn_supersedes_it(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    [item] = (await life.app.services.reads.inbox(None))["items"]
    assert (item["id"], item["state"]) == (pending_id, "active_detached")

    await life.app.services.admission.submit(session_id, "never mind, do something else")
    await life.runtime.wait_for_prompts(2)

    assert (await life.app.services.reads.inbox(None))["total"] == 0


async def test_the_inbox_shows_only_the_given_workspaces(life: Lifecycle) -> None:
    svc = life.app.services
    theirs = await svc.tasks.create(title="theirs", description="", workspace="beta")
    session = await svc.sessions.start(theirs.id, agent="builtin", prompt="go", is_primary=True)
    call, pending_id = await life.ask(session.id)
    try:
        workspaces = {t.id: t.workspace_id for t in await life.store.list_tasks()}
        beta = workspaces[theirs.id]
        assert [i["id"] for i in (await svc.reads.inbox([beta]))["items"]] == [pending_id]
        assert (await svc.reads.inbox(["some-other-workspace"]))["total"] == 0
        assert (await svc.reads.inbox([]))["total"] == 0
    finally:
        await _stop(call)


async def test_get_inbox_over_http_answers_the_same_items(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    try:
        async with serving(life) as base, httpx.AsyncClient(base_url=base, timeout=10) as http:
            reply = await http.get("/inbox")
        assert reply.status_code == 200, reply.text
        served, read = reply.json(), await life.app.services.reads.inbox(None)
        # Each read issues its own answer link (the same one within its expiry's step).
        for inbox in (served, read):
            for item in inbox["items"]:
                assert item.pop("answer_url").rsplit("/a/", 1)[1].count(".") == 1
        assert served == read
        assert served["items"][0]["id"] == pending_id
    finally:
        await _stop(call)


async def test_an_item_carries_what_a_person_needs_to_answer_it_without_opening_the_session(
    life: Lifecycle,
) -> None:
    svc = life.app.services
    task = await svc.tasks.create(
        title="Backend", description="Build the **orders** service.", workspace=None
    )
    session = await svc.sessions.start(task.id, agent="builtin", prompt="go", is_primary=True)
    await life.runtime.wait_for_prompts(1)
    await life.runtime.say(session.id, "I need one decision before I write code.")
    await life.runtime.say(session.id, "weighing the options", kind="thought")
    asking = {**ASK_DB, "context": "I am setting up a new backend service."}
    call, pending_id = await life.ask(session.id, asking)
    _, wordy = await life.start_session()
    await life.runtime.wait_for_prompts(2)
    await life.runtime.say(wordy, "x" * 700)
    waiting, message_id = await _permission(life, wordy)
    try:
        question, permission = (await svc.reads.inbox(None))["items"]

        assert question["id"] == pending_id
        assert question["context"] == "I am setting up a new backend service."
        assert question["task_description"] == "Build the **orders** service."
        assert question["last_agent_message"] == "I need one decision before I write code."
        assert question["task"] == {"id": task.id, "title": "Backend"}
        assert permission["id"] == message_id
        assert permission["task_description"] == ""
        assert permission["last_agent_message"] == "x" * 600 + "…"
    finally:
        await _stop(call)
        await _stop(waiting)
