"""A call whose connection drops without `notifications/cancelled` can never carry a result back,
so the question detaches at once: an answer then resumes the agent as a new prompt and the
responder is told so (`resumed: true`), never that a call nobody holds received it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from clarion.ports import PromptFinished
from tests.hardening.mcp_rig import McpRig, mcp_rig, rpc

ASK = {
    "name": "ask_user_question",
    "arguments": {
        "questions": [
            {
                "id": "db",
                "prompt": "Which?",
                "options": [{"label": "A", "option_id": "a"}, {"label": "B", "option_id": "b"}],
            }
        ]
    },
}
ANSWER = {
    "answers": [{"question_id": "db", "selected_options": ["a"], "custom_text": ""}],
    "rejected": False,
    "reject_reason": "",
}


async def until(probe: Callable[[], Awaitable[object]], what: str, within: float = 60) -> object:
    # A bundle's state is computed from rows and the waiter registry; no one event marks it.
    async def loop() -> object:
        while not (value := await probe()):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        return value

    try:
        return await asyncio.wait_for(loop(), within)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def crashes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.exc_info is not None or r.levelno >= logging.ERROR
    ]


async def pending_id(rig: McpRig) -> str | None:
    page = await rig.app.stores.reads.list_messages(rig.session_id, limit=100)
    ids = [m.metadata.get("pending_id") for m in page.messages if m.type == "clarification_request"]
    return str(ids[0]) if ids else None


async def state(rig: McpRig, pid: str) -> str:
    return str((await rig.app.services.reads.bundle(pid))["state"])


async def test_a_dropped_call_detaches_and_the_answer_resumes_the_agent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with mcp_rig(tmp_path) as rig:
        session = await rig.initialize()

        async def call() -> None:
            async with (
                httpx.AsyncClient(base_url=rig.tcp_url, timeout=30) as tcp,
                tcp.stream(
                    "POST", rig.path, json=rpc(7, "tools/call", ASK), headers=rig.headers(session)
                ) as response,
            ):
                async for _ in response.aiter_lines():
                    pass

        caller = asyncio.create_task(call())
        pid = str(await until(lambda: pending_id(rig), "the question"))
        await until(lambda: _is(rig, pid, "active_live"), "a live waiter")

        # The client goes away without notifications/cancelled (a timeout, a crash).
        caller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await caller
        await until(lambda: _is(rig, pid, "active_detached"), "the question to detach", 5)

        # As the tool description tells it, the agent ends its turn; the answer then arrives
        # as a new prompt, and the responder hears exactly that.
        respond = asyncio.create_task(
            rig.client.post(f"/api/v1/clarification/{pid}/respond", json=ANSWER)
        )
        await rig.runtime.sink.on_prompt_finished(PromptFinished(rig.session_id, 1, "end_turn"))
        response = await asyncio.wait_for(respond, 30)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "answered"
        assert body["resumed"] is True and body["successor_turn_id"]
    assert crashes(caplog) == []


async def _is(rig: McpRig, pid: str, wanted: str) -> bool:
    return await state(rig, pid) == wanted


@pytest.mark.parametrize("abort", ["keep", "abort_after", "abort_before"])
async def test_a_cancelled_call_detaches_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, abort: str
) -> None:
    """Like the TypeScript SDK on its own timeout: `notifications/cancelled`, and the request's
    stream kept, or aborted right after (or just before) the notification."""
    caplog.set_level(logging.INFO)
    async with mcp_rig(tmp_path) as rig:
        session = await rig.initialize()
        lines: list[str] = []

        async def call() -> None:
            async with (
                httpx.AsyncClient(base_url=rig.tcp_url, timeout=30) as tcp,
                tcp.stream(
                    "POST", rig.path, json=rpc(7, "tools/call", ASK), headers=rig.headers(session)
                ) as response,
            ):
                lines.extend([line async for line in response.aiter_lines()])

        caller = asyncio.create_task(call())
        pid = str(await until(lambda: pending_id(rig), "the question"))
        await until(lambda: _is(rig, pid, "active_live"), "a live waiter")
        cancel = rpc(None, "notifications/cancelled", {"requestId": 7, "reason": "timeout"})
        if abort == "abort_before":
            caller.cancel()
        assert (await rig.post(cancel, session)).status_code == 202
        if abort == "abort_after":
            caller.cancel()
        await until(lambda: _is(rig, pid, "active_detached"), "the question to detach", 5)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(caller, 10)  # the call's stream ends
        assert not any('"id":7' in line and '"result"' in line for line in lines)
        # The endpoint still serves the next call's protocol traffic.
        assert (await rig.post(rpc(8, "tools/list", {}), session)).status_code == 200
    assert crashes(caplog) == []
