"""The built-in agent's ask scenarios against a real MCP server over streamable HTTP."""

from __future__ import annotations

import asyncio
import json

import pytest

from clarion.agents.runtime import AcpRuntime
from tests.agents.agent_harness import WAIT_S, AskServer, RecordingSink, launch

pytestmark = pytest.mark.timeout(180)

ANSWER = json.dumps({"db": {"selected_options": ["postgres"], "custom_text": ""}})


async def _start(runtime: AcpRuntime, server: AskServer, token: str | None = None) -> None:
    await runtime.ensure_started(launch("s1", server.url("s1"), token or server.token))


async def test_ask_replies_with_the_exact_tool_result(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    await _start(runtime, ask_server)
    await runtime.prompt("s1", "/scenario ask", generation=1)
    async with asyncio.timeout(WAIT_S):
        await ask_server.called.wait()
    questions = ask_server.calls[0]["questions"]
    assert [q["id"] for q in questions] == ["db"]
    assert [(o["option_id"], o["label"]) for o in questions[0]["options"]] == [
        ("postgres", "PostgreSQL"),
        ("mongodb", "MongoDB"),
        ("sqlite", "SQLite"),
    ]
    assert all(o["description"] for o in questions[0]["options"])
    assert (await _pending(sink)) is True
    ask_server.reply(ANSWER)
    assert (await sink.finished(1)).stop_reason == "end_turn"
    assert sink.messages(1) == [f"You answered: {ANSWER}"]
    kinds = [(o.kind, o.data.get("status")) for o in sink.outputs if o.kind != "message"]
    assert kinds == [("tool_call", "in_progress"), ("tool_call_update", "completed")]
    assert ask_server.unauthorized == 0


async def test_questions_of_one_session_share_one_mcp_session(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    await _start(runtime, ask_server)
    for generation in (1, 2):
        await _ask_and_answer(runtime, sink, ask_server, generation)
    assert sink.messages(2) == [f"You answered: {ANSWER}"]
    assert len(ask_server.calls) == 2
    assert len(ask_server.mcp_sessions) == 1


async def test_a_timed_out_call_drops_the_session_and_the_next_question_opens_another(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    ask_server.mode = "hang"
    await _start(runtime, ask_server)
    await runtime.prompt("s1", "/scenario ask-timeout t=1", generation=1)
    assert (await sink.finished(1)).stop_reason == "end_turn"
    async with asyncio.timeout(WAIT_S):
        await ask_server.cancelled.wait()
    ask_server.mode = "answer"
    await _ask_and_answer(runtime, sink, ask_server, 2)
    assert sink.messages(2) == [f"You answered: {ANSWER}"]
    assert len(ask_server.mcp_sessions) == 2


async def _ask_and_answer(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer, generation: int
) -> None:
    ask_server.called.clear()
    await runtime.prompt("s1", "/scenario ask", generation=generation)
    async with asyncio.timeout(WAIT_S):
        await ask_server.called.wait()
    ask_server.reply(ANSWER)
    assert (await sink.finished(generation)).stop_reason == "end_turn"


async def _pending(sink: RecordingSink) -> bool:
    """The prompt has not finished while the tool waits for its answer."""
    return not any(type(i).__name__ == "PromptFinished" for i in sink.items)


async def test_tool_error_leaves_the_question_open(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    ask_server.mode = "error"
    await _start(runtime, ask_server)
    await runtime.prompt("s1", "/scenario ask", generation=1)
    assert (await sink.finished(1)).stop_reason == "end_turn"
    assert sink.messages(1) == ["Question left open; ending turn."]


async def test_ask_timeout_gives_up_and_cancels_the_call(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    ask_server.mode = "hang"
    await _start(runtime, ask_server)
    await runtime.prompt("s1", "/scenario ask-timeout t=1", generation=1)
    assert (await sink.finished(1)).stop_reason == "end_turn"
    assert sink.messages(1) == ["No answer yet; ending turn."]
    async with asyncio.timeout(WAIT_S):
        await ask_server.cancelled.wait()


async def test_ask_multi_sends_three_questions_and_a_context(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    await _start(runtime, ask_server)
    await runtime.prompt("s1", "/scenario ask-multi", generation=1)
    async with asyncio.timeout(WAIT_S):
        await ask_server.called.wait()
    call = ask_server.calls[0]
    assert [q["id"] for q in call["questions"]] == ["db", "language", "deploy"]
    options = {q["id"]: [o["option_id"] for o in q["options"]] for q in call["questions"]}
    assert options == {
        "db": ["postgres", "mongodb", "sqlite"],
        "language": ["python", "go", "rust"],
        "deploy": ["docker", "bare-metal"],
    }
    assert call["context"]
    ask_server.reply("all answered")
    await sink.finished(1)
    assert sink.messages(1) == ["You answered: all answered"]


async def test_ask_silent_holds_the_turn_until_cancelled(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    await _start(runtime, ask_server)
    await runtime.prompt("s1", "/scenario ask-silent", generation=2)
    async with asyncio.timeout(WAIT_S):
        await ask_server.called.wait()
    ask_server.reply(ANSWER)
    count = len(sink.items)
    # The turn stays open and quiet; a prompt-end would be a defect. Cancel, then check that
    # nothing but the ack and the end arrived after the answer.
    await runtime.cancel("s1")
    finished = await sink.finished(2)
    assert finished.stop_reason == "cancelled"
    after = [(type(i).__name__, getattr(i, "kind", None)) for i in sink.items[count:]]
    assert after == [("AgentOutput", "cancel_ack"), ("PromptFinished", None)]


async def test_cancel_while_waiting_cancels_the_server_call(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    ask_server.mode = "hang"
    await _start(runtime, ask_server)
    await runtime.prompt("s1", "/scenario ask", generation=1)
    async with asyncio.timeout(WAIT_S):
        await ask_server.called.wait()
    await runtime.cancel("s1")
    assert (await sink.finished(1)).stop_reason == "cancelled"
    async with asyncio.timeout(WAIT_S):
        await ask_server.cancelled.wait()


async def test_wrong_token_is_rejected_and_reported(
    runtime: AcpRuntime, sink: RecordingSink, ask_server: AskServer
) -> None:
    await _start(runtime, ask_server, token="not-the-token")
    await runtime.prompt("s1", "/scenario ask", generation=1)
    assert (await sink.finished(1)).stop_reason == "end_turn"
    assert ask_server.calls == []
    assert ask_server.unauthorized >= 1
    assert sink.messages(1)[0].startswith("Could not ask the question")
