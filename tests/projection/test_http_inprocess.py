"""HTTP and WebSocket edges of the projections on the real application (uvicorn in process),
with fault points set while it runs and a store that fails where a real server offers no fault
point (the workflow guard's repository read)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from clarion.runtime import failpoints
from clarion.store import Stores
from tests.lifecycle.harness import Lifecycle, running_lifecycle
from tests.projection.builders import FailingStore
from tests.projection.served import receive_until, serving
from tests.whole_store import whole_of


@dataclass
class Served:
    life: Lifecycle
    store: FailingStore
    http: httpx.AsyncClient
    ws_url: str


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    holder: dict[str, FailingStore] = {}

    def wrap(stores: Stores) -> Stores:
        holder["store"] = failing = FailingStore(whole_of(stores))
        return failing.wrapping(stores)

    async with (
        running_lifecycle(f"sqlite:///{tmp_path / 'http.db'}", store_wrapper=wrap) as life,
        serving(life) as base,
        httpx.AsyncClient(base_url=base, timeout=10) as http,
    ):
        yield Served(life, holder["store"], http, base.replace("http://", "ws://") + "/ws")


@contextlib.asynccontextmanager
async def asking(life: Lifecycle, session_id: str) -> AsyncIterator[str]:
    """A live question in the session for the duration of the block."""
    call, pending_id = await life.ask(session_id)
    try:
        yield pending_id
    finally:
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call


async def test_the_session_list_fails_over_http_and_websocket_when_projection_fails(
    served: Served,
) -> None:
    task_id, session_id = await served.life.start_session()
    async with asking(served.life, session_id):
        ok = await served.http.get(f"/tasks/{task_id}/task-sessions")
        assert ok.json()["sessions"][0]["pending_action"] == "clarification"

        failpoints.configure("projection.read=error")
        for path in (f"/tasks/{task_id}/task-sessions", f"/tasks/{task_id}/sessions"):
            failed = await served.http.get(path)
            assert failed.status_code == 500, failed.text
            assert "sessions" not in failed.json()
            assert set(failed.json()["error"]) >= {"code", "message", "retryable"}

        async with connect(served.ws_url) as ws:
            request = {"type": "request", "id": "l1", "action": "session.list"}
            await ws.send(json.dumps({**request, "payload": {"task_id": task_id}}))
            reply = await receive_until(ws, lambda m: m.get("id") == "l1")
        assert reply["type"] == "error" and reply["action"] == "session.list"
        assert "sessions" not in reply["payload"]


async def test_ws_message_events_carry_null_when_clean_and_omit_it_when_content_only_or_failed(
    served: Served,
) -> None:
    task_id, session_id = await served.life.start_session()
    async with connect(served.ws_url) as ws:
        await ws.send(
            json.dumps(
                {
                    "type": "request",
                    "id": "s",
                    "action": "subscribe",
                    "payload": {"task_id": task_id},
                }
            )
        )
        await receive_until(ws, lambda m: m.get("id") == "s")
        await served.life.runtime.say(session_id, "clean so far")
        clean = await receive_until(ws, lambda m: m.get("action") == "session.message.added")
        assert clean["payload"]["pending_action"] is None
        assert "pending_action_revision" in clean["payload"]

        await served.life.runtime.say(session_id, " and more")
        streamed = await receive_until(ws, lambda m: m.get("action") == "session.message.updated")
        assert streamed["payload"]["content"] == "clean so far and more"
        assert "pending_action" not in streamed["payload"], "content-only updates omit it"

        failpoints.configure("projection.read=error")
        await served.life.runtime.say(session_id, "projection broken", kind="thought")
        failed = await receive_until(
            ws,
            lambda m: (
                m.get("action") == "session.message.added"
                and m["payload"]["content"] == "projection broken"
            ),
        )
        assert "pending_action" not in failed["payload"]
        assert "pending_action_revision" not in failed["payload"]


async def test_a_failing_summary_repair_invalidates_only_that_task(served: Served) -> None:
    asking_task, session_id = await served.life.start_session()
    quiet_task, _ = await served.life.start_session()
    failpoints.configure("summary.cas=error")  # no summary is ever written for the question
    async with asking(served.life, session_id):
        for path in ("/tasks", "/boot"):
            tasks = {t["id"]: t for t in (await served.http.get(path)).json()["tasks"]}
            broken = tasks[asking_task]
            assert broken["status_summary_invalidated"] is True, path
            assert broken["task_pending_action"] == "clarification", path
            assert "status_summary_invalidated" not in tasks[quiet_task], path
        snapshot = (await served.http.get("/workflow/snapshot")).json()
        flagged = [
            t["id"]
            for s in snapshot["steps"]
            for t in s["tasks"]
            if t.get("status_summary_invalidated")
        ]
        assert flagged == [asking_task]


async def test_a_move_is_refused_with_409_pending_input_while_a_question_is_pending(
    served: Served,
) -> None:
    task_id, session_id = await served.life.start_session()
    async with asking(served.life, session_id):
        refused = await served.http.post(f"/tasks/{task_id}/move", json={"step": "review"})
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "pending_input"
    assert refused.json()["error"]["retryable"] is False


async def test_a_move_is_refused_with_500_when_the_guard_cannot_read_and_nothing_moves(
    served: Served,
) -> None:
    task_id, _ = await served.life.start_session()
    served.store.fail["sessions_with_active_clarification"] = OSError("database went away")
    refused = await served.http.post(f"/tasks/{task_id}/move", json={"step": "done"})
    assert refused.status_code == 500
    assert refused.json()["error"]["code"] == "internal"
    del served.store.fail["sessions_with_active_clarification"]
    task = (await served.http.get(f"/tasks/{task_id}")).json()["task"]
    assert task["workflow_step"] == "backlog"
    assert served.store.calls.get("set_task_step") is None
