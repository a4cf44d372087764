"""The live respond path: durable confirmation before the agent sees the answer."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from clarion.clarification.respond_result import RespondResult
from clarion.domain.errors import (
    AcceptedButUnfinalized,
    InvalidInput,
    NotActive,
    RetryableFailure,
)
from clarion.domain.models import MetaKey, SessionState
from clarion.runtime import failpoints
from tests.lifecycle.harness import (
    SKIP,
    Lifecycle,
    answer_db,
    lifecycle_with_failing_store,
)


async def test_live_answer_is_durable_before_the_agent_sees_it(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    assert await life.state(pending_id) == "active_live"

    result = await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))

    tool_text = await asyncio.wait_for(call, 5)
    assert json.loads(tool_text) == {"db": {"selected_options": ["sqlite"], "custom_text": ""}}
    rows = (await life.bundle(pending_id)).rows
    assert all(MetaKey.RESPONSE_DELIVERY_PENDING not in r.metadata for r in rows)
    assert [r.metadata["status"] for r in rows] == ["answered"]
    assert result.resumed is False
    assert await life.state(pending_id) == "terminal"


async def test_a_live_cycle_announces_waiting_then_running_once_each(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    before = len(life.events_of("session.state_changed"))
    call, pending_id = await life.ask(session_id)

    await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))
    await asyncio.wait_for(call, 5)
    # The answered row is announced in the background, as the confirmation left it.
    updated = await life.wait_for_event(
        "session.message.updated",
        lambda e: e.payload.get("metadata", {}).get("pending_id") == pending_id,
    )

    states = [
        e.payload["state"]
        for e in life.events_of("session.state_changed")[before:]
        if e.session_id == session_id
    ]
    assert states == ["WAITING_FOR_INPUT", "RUNNING"]
    assert (await life.store.get_session(session_id)).state is SessionState.RUNNING
    metadata = updated.payload["metadata"]
    assert metadata["status"] == "answered"
    assert MetaKey.RESPONSE_DELIVERY_PENDING not in metadata


async def test_live_rejection_is_delivered_to_the_waiter(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)

    result = await life.app.services.resolver.respond(pending_id, SKIP)

    assert json.loads(await asyncio.wait_for(call, 5)) == {
        "rejected": True,
        "reject_reason": "User skipped",
    }
    assert result.wire()["status"] == "rejected"
    assert life.runtime.prompts[1:] == [], "a rejection never resumes the agent"


async def test_started_confirmation_owns_its_outcome_past_the_responders_wait(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    # The confirmation starts within the 1 s live wait but takes longer than it.
    failpoints.configure("live.before_confirm=delay_ms:1500")

    result = await life.app.services.resolver.respond(pending_id, answer_db())

    assert isinstance(result, RespondResult)
    assert json.loads(await asyncio.wait_for(call, 5))["db"]["selected_options"] == ["postgres"]
    assert await life.state(pending_id) == "terminal"


async def test_delivery_failure_before_confirmation_restores_a_retryable_bundle(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    failpoints.configure("live.before_confirm=error")

    with pytest.raises(RetryableFailure) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db())

    assert raised.value.code == "delivery_failed"
    assert await life.state(pending_id) == "active_live"
    failpoints.configure("")
    await life.app.services.resolver.respond(pending_id, answer_db("mongodb"))
    assert json.loads(await asyncio.wait_for(call, 5))["db"]["selected_options"] == ["mongodb"]


async def test_claim_superseded_before_handoff_is_never_restored_or_resumed(
    store_url: str,
) -> None:
    async with lifecycle_with_failing_store(store_url) as (life, failing):
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        prompts_before = len(life.runtime.prompts)

        async def supersede() -> None:
            # Right after the claim: the agent drops the call and newer work starts.
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
            await life.store.create_turn(session_id)

        failing.after["claim_response"] = supersede

        with pytest.raises(AcceptedButUnfinalized):
            await life.app.services.resolver.respond(pending_id, answer_db())

        bundle = await life.bundle(pending_id)
        assert all(r.metadata["status"] == "answered" for r in bundle.rows)
        assert all(MetaKey.RESPONSE_DELIVERY_PENDING not in r.metadata for r in bundle.rows)
        assert await life.state(pending_id) == "terminal"
        assert len(life.runtime.prompts) == prompts_before, "no resume for superseded history"
        assert await life.live_reservation(session_id) is None


async def test_second_live_responder_gets_conflict_without_write(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))
    before = (await life.bundle(pending_id)).rows

    with pytest.raises(NotActive) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db("mongodb"))

    assert raised.value.state == "terminal"
    assert raised.value.response is not None
    assert raised.value.response["answers"][0]["selected_options"] == ["sqlite"]
    assert (await life.bundle(pending_id)).rows == before
    await asyncio.wait_for(call, 5)


async def test_a_live_answer_is_claimed_without_reading_the_bundle_first(store_url: str) -> None:
    async with lifecycle_with_failing_store(store_url) as (life, failing):
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        # The waiter holds the questions; the claim's guarded update is the only check.
        failing.fail["find_bundle"] = AssertionError("the bundle was read before the claim")

        result = await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))

        assert result.resumed is False
        tool_text = await asyncio.wait_for(call, 5)
        assert json.loads(tool_text)["db"]["selected_options"] == ["sqlite"]


async def test_an_invalid_answer_to_a_live_question_is_refused_without_any_read_or_write(
    store_url: str,
) -> None:
    async with lifecycle_with_failing_store(store_url) as (life, failing):
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        failing.fail["find_bundle"] = AssertionError("the bundle was read")
        failing.fail["claim_response"] = AssertionError("an invalid answer was claimed")

        with pytest.raises(InvalidInput):
            await life.app.services.resolver.respond(pending_id, answer_db("no-such-option"))

        del failing.fail["find_bundle"]
        assert await life.state(pending_id) == "active_live"
        assert not call.done()
        call.cancel()


async def test_an_answer_to_a_live_question_a_newer_turn_superseded_is_refused_and_ends_its_call(
    life: Lifecycle,
) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    prompts_before = len(life.runtime.prompts)
    # Newer work while the agent still waits on the old question (its call not yet dropped).
    await life.store.create_turn(session_id)

    with pytest.raises(NotActive) as raised:
        await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))

    assert raised.value.state == "superseded_history"
    # The stale call is released without the answer; history is not rewritten.
    assert json.loads(await asyncio.wait_for(call, 5)) == {
        "rejected": True,
        "reject_reason": "cancelled",
    }
    assert [r.metadata["status"] for r in (await life.bundle(pending_id)).rows] == ["pending"]
    assert len(life.runtime.prompts) == prompts_before
