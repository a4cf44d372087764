"""A live answer whose tool call the agent reports failed: its own MCP client gave up on
`ask_user_question` just as Clarion confirmed the answer, so the result went back on a call
nobody was reading. The agent's report (`tool_call_update`, status `failed`, on the call that
asked) is the only sign: the answer reads `delivery: "ambiguous"` at once, and goes to the agent
once more as a new turn when the agent's turn ends. Any other activity of the agent keeps its
usual meaning (the watchdog is cancelled and nothing is sent again)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from clarion.ports import AgentOutput, Event
from tests.lifecycle.harness import Lifecycle, answer_db

RESUME = "You previously asked the user:"
ASK_CALL = "call-ask-1"


async def tool_call(life: Lifecycle, session_id: str, call_id: str, title: str) -> None:
    generation = life.runtime.active[session_id]
    data = {"tool_call_id": call_id, "title": title, "kind": "other", "status": "in_progress"}
    await life.runtime.sink.on_output(AgentOutput(session_id, generation, "tool_call", data=data))


async def call_failed(life: Lifecycle, session_id: str, call_id: str = ASK_CALL) -> None:
    generation = life.runtime.active[session_id]
    data = {"tool_call_id": call_id, "status": "failed"}
    await life.runtime.sink.on_output(
        AgentOutput(session_id, generation, "tool_call_update", data=data)
    )


def updated_with(
    pending_id: str, check: Callable[[dict[str, Any]], bool]
) -> Callable[[Event], bool]:
    """Matches the `session.message.updated` event of one of the bundle's rows whose metadata
    passes `check`."""

    def match(event: Event) -> bool:
        metadata = event.payload.get("metadata", {})
        return metadata.get("pending_id") == pending_id and check(metadata)

    return match


async def asked_and_answered(life: Lifecycle, *, failed_first: bool = False) -> tuple[str, str]:
    """A session whose agent asked through `ASK_CALL` and got a confirmed live answer; with
    `failed_first`, the agent's report that the call failed is seen before the confirmation."""
    _, session_id = await life.start_session()
    await tool_call(life, session_id, ASK_CALL, "mcp__clarion__ask_user_question")
    call, pending_id = await life.ask(session_id)
    if failed_first:
        await call_failed(life, session_id)
    await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))
    await asyncio.wait_for(call, 5)
    return session_id, pending_id


async def delivery(life: Lifecycle, pending_id: str) -> set[object]:
    return {r.metadata.get("delivery") for r in (await life.bundle(pending_id)).rows}


async def test_answer_on_a_call_the_agent_reports_failed_goes_again_as_one_new_turn(
    life: Lifecycle,
) -> None:
    session_id, pending_id = await asked_and_answered(life)

    await call_failed(life, session_id)
    await life.runtime.say(session_id, "No answer yet; ending turn.")
    assert life.app.watchdogs.armed(session_id) == [], "the report took the watch over"
    await life.runtime.end_turn(session_id)

    prompts = await life.runtime.wait_for_prompts(2)
    assert prompts[1][1].startswith(RESUME) and "SQLite" in prompts[1][1]
    assert life.runtime.cancels == [], "the agent's own turn was let end, not cancelled"
    await life.wait_for_event(
        "session.message.updated", updated_with(pending_id, lambda m: "resent_turn_id" in m)
    )
    current = await life.store.find_current_turn(session_id)
    rows = (await life.bundle(pending_id)).rows
    assert current is not None and {r.metadata.get("resent_turn_id") for r in rows} == {current.id}
    await life.settle()
    assert len(life.runtime.prompts) == 2, "sent again exactly once"


async def test_failure_reported_before_the_confirmation_sends_the_answer_again(
    life: Lifecycle,
) -> None:
    session_id, pending_id = await asked_and_answered(life, failed_first=True)

    await life.runtime.end_turn(session_id)

    prompts = await life.runtime.wait_for_prompts(2)
    assert prompts[1][1].startswith(RESUME) and "SQLite" in prompts[1][1]
    assert life.app.watchdogs.armed(session_id) == []
    await life.wait_for_event(
        "session.message.updated", updated_with(pending_id, lambda m: "resent_turn_id" in m)
    )


async def test_answer_the_agent_will_not_take_again_stays_ambiguous_for_the_person(
    life: Lifecycle,
) -> None:
    session_id, pending_id = await asked_and_answered(life)
    life.runtime.refuse_prompts = True

    await call_failed(life, session_id)
    await life.runtime.end_turn(session_id)

    # Two updates read ambiguous: the mark, then the release of the refused resend.
    updated, ambiguous = (
        "session.message.updated",
        updated_with(pending_id, lambda m: m.get("delivery") == "ambiguous"),
    )
    marked = life.events.index(await life.wait_for_event(updated, ambiguous))
    await life.wait_for_event(updated, lambda e: ambiguous(e) and life.events.index(e) > marked)
    assert await delivery(life, pending_id) == {"ambiguous"}, "refused: left for the person"
    life.runtime.refuse_prompts = False
    turn_id = await life.app.services.resender.resend(pending_id)
    prompts = await life.runtime.wait_for_prompts(2)
    assert prompts[1][1].startswith(RESUME)
    current = await life.store.find_current_turn(session_id)
    assert current is not None and current.id == turn_id


async def test_a_failed_call_of_another_tool_is_ordinary_activity(life: Lifecycle) -> None:
    session_id, pending_id = await asked_and_answered(life)
    await tool_call(life, session_id, "call-edit-1", "Edit README.md")

    await call_failed(life, session_id, "call-edit-1")
    await life.runtime.end_turn(session_id)
    await life.settle()
    await life.app.stores.reads.list_tasks()
    await life.settle()

    assert life.app.watchdogs.armed(session_id) == [], "activity cancelled the watch"
    assert await delivery(life, pending_id) == {"delivered"}
    assert len(life.runtime.prompts) == 1


async def test_a_completed_ask_call_is_the_agent_reading_the_answer(life: Lifecycle) -> None:
    session_id, pending_id = await asked_and_answered(life)
    generation = life.runtime.active[session_id]
    data = {"tool_call_id": ASK_CALL, "status": "completed"}

    await life.runtime.sink.on_output(
        AgentOutput(session_id, generation, "tool_call_update", data=data)
    )
    await call_failed(life, session_id)  # a late, contradictory report changes nothing
    await life.runtime.end_turn(session_id)
    await life.settle()
    await life.app.stores.reads.list_tasks()
    await life.settle()

    assert await delivery(life, pending_id) == {"delivered"}
    assert len(life.runtime.prompts) == 1
