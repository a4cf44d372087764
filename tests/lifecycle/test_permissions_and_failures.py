"""Permission requests and agent failures through the real services, with a scripted agent
runtime: a decision racing the end of the agent's call, the requests' end-of-call rules, and a
refused prompt shown as an error. Real agents are covered in tests/e2e."""

from __future__ import annotations

import asyncio

import pytest

from clarion.domain.errors import DecisionNotActive
from clarion.domain.models import MessageType, SessionState
from clarion.ports import PermissionAsk
from tests.lifecycle.harness import Lifecycle

OPTIONS = (("allow", "Allow", "allow_once"), ("reject", "Reject", "reject_once"))
ROUNDS = 5


def _ask(session_id: str, call: str = "c1", kind: str = "edit") -> PermissionAsk:
    return PermissionAsk(session_id, call, "Edit README.md", kind, {"path": "README.md"}, OPTIONS)


async def _asked(
    life: Lifecycle, session_id: str, call: str
) -> tuple[asyncio.Task[str | None], str]:
    """The agent's request, still waiting, and its row's id once it is written."""
    waiting = asyncio.create_task(life.runtime.sink.on_permission(_ask(session_id, call)))
    event = await life.wait_for_event(
        "session.message.added",
        lambda e: (
            e.payload.get("type") == "permission_request"
            and e.payload["metadata"]["tool_call"]["tool_call_id"] == call
        ),
    )
    return waiting, str(event.payload["id"])


async def test_a_decision_racing_the_turn_end_either_wins_or_finds_the_request_cancelled(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    outcomes = set()
    for round_no in range(ROUNDS):
        [(_, _, generation)] = life.runtime.prompts[-1:]
        waiting, message_id = await _asked(life, session_id, f"c{round_no}")

        decided, _ = await asyncio.gather(
            life.app.services.permissions.respond(message_id, {"option_id": "allow"}),
            life.runtime.end_turn(session_id, generation),
            return_exceptions=True,
        )

        row = await life.store.get_message(message_id)
        agent_got = await asyncio.wait_for(waiting, 5)
        if isinstance(decided, DecisionNotActive):
            assert row.metadata["status"] == "cancelled" and agent_got is None
            assert decided.state == "cancelled"
        else:
            assert not isinstance(decided, BaseException), decided
            assert row.metadata["status"] == "approved" and agent_got == "allow"
        outcomes.add(row.metadata["status"])
        assert (await life.store.pending_actions([session_id]))[session_id] is None
        await life.app.services.admission.submit(session_id, f"next {round_no}")
        await life.runtime.wait_for_prompts(round_no + 2)
    assert outcomes <= {"approved", "cancelled"}


async def test_a_request_outside_a_running_turn_is_cancelled_and_not_recorded(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    await life.runtime.end_turn(session_id)

    assert await life.runtime.sink.on_permission(_ask(session_id)) is None

    page = await life.store.list_messages(session_id)
    assert not [m for m in page.messages if m.type is MessageType.PERMISSION_REQUEST]


async def test_a_decision_after_the_agent_call_ended_writes_nothing(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    waiting, message_id = await _asked(life, session_id, "c1")
    await life.runtime.end_turn(session_id)
    assert await asyncio.wait_for(waiting, 5) is None

    with pytest.raises(DecisionNotActive) as refused:
        await life.app.services.permissions.respond(message_id, {"option_id": "allow"})

    assert refused.value.state == "cancelled" and refused.value.decision is None
    row = await life.store.get_message(message_id)
    assert row.metadata["reason"] == "turn_ended"
    session = await life.store.get_session(session_id)
    assert session.state is SessionState.IDLE


async def test_a_refused_prompt_is_shown_as_an_error_and_leaves_the_session_idle(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    await life.runtime.end_turn(session_id)
    life.runtime.refuse_prompts = True

    with pytest.raises(Exception, match="refused"):
        await life.app.services.admission.submit(session_id, "again")

    page = await life.store.list_messages(session_id)
    [error] = [m for m in page.messages if m.type is MessageType.ERROR]
    assert error.metadata["phase"] == "prompt" and error.metadata["stop_reason"] == "refused"
    session = await life.store.get_session(session_id)
    assert session.state is SessionState.IDLE
    assert session.metadata["error"] in error.content
