"""Expiry on a manual clock, on both databases: a live and a detached question, skip, default
and keep; the expiry answers through the respond path, exactly once, and a question with no
policy is untouched."""

from __future__ import annotations

import asyncio
import contextlib
import json

from clarion.domain.models import MetaKey
from clarion.domain.waiting import OnExpiry
from tests.lifecycle.harness import ASK_DB, Lifecycle, answer_db
from tests.waiting.rig import (
    ASK_DEFAULT,
    REAL_TIME_MARGIN_S,
    ShiftedClock,
    eventually,
    policy,
    waiting_lifecycle,
)

RESUME = "You previously asked the user:"
HOUR = 3600.0
SKIP_1H = policy(expire="1h", on_expiry=OnExpiry.SKIP)
DEFAULT_1H = policy(expire="1h", on_expiry=OnExpiry.DEFAULT)


async def _detach(life: Lifecycle, session_id: str, arguments: object) -> str:
    call, pending_id = await life.ask(session_id, arguments)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    await life.runtime.end_turn(session_id)
    assert await life.state(pending_id) == "active_detached"
    return pending_id


def _resume_prompts(life: Lifecycle) -> list[str]:
    return [text for _, text, _ in life.runtime.prompts if text.startswith(RESUME)]


async def _terminal(life: Lifecycle, pending_id: str) -> None:
    async def done() -> bool:
        return await life.state(pending_id) == "terminal"

    await eventually(done)


async def test_a_live_question_expires_with_skip_and_the_tool_call_returns_it(
    store_url: str,
) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, SKIP_1H, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)

        clock.advance(HOUR - REAL_TIME_MARGIN_S)
        await life.app.deadlines.fire_due(None)  # what the scheduler does when it wakes
        assert not call.done() and await life.state(pending_id) == "active_live"
        clock.advance(REAL_TIME_MARGIN_S)
        result = json.loads(await asyncio.wait_for(call, 30))

        assert result == {"rejected": True, "reject_reason": "No answer within 1h"}
        rows = (await life.bundle(pending_id)).rows
        assert [r.metadata[MetaKey.ANSWERED_BY] for r in rows] == ["policy"]


async def test_a_live_question_expires_with_its_default_option(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, DEFAULT_1H, clock) as life:
        _, session_id = await life.start_session()
        call, _ = await life.ask(session_id, ASK_DEFAULT)

        clock.advance(HOUR)
        result = json.loads(await asyncio.wait_for(call, 30))

        assert result == {"db": {"selected_options": ["sqlite"], "custom_text": ""}}


async def test_a_detached_skip_is_persisted_and_the_agent_is_not_resumed(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, SKIP_1H, clock) as life:
        _, session_id = await life.start_session()
        pending_id = await _detach(life, session_id, ASK_DB)
        prompts_before = len(life.runtime.prompts)

        clock.advance(HOUR)
        await _terminal(life, pending_id)

        rows = (await life.bundle(pending_id)).rows
        assert [r.metadata["status"] for r in rows] == ["rejected"]
        assert rows[0].metadata[MetaKey.REJECT_REASON] == "No answer within 1h"
        assert len(life.runtime.prompts) == prompts_before


async def test_a_detached_default_resumes_the_agent_once_with_the_resume_prompt(
    store_url: str,
) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, DEFAULT_1H, clock) as life:
        _, session_id = await life.start_session()
        pending_id = await _detach(life, session_id, ASK_DEFAULT)

        clock.advance(HOUR)
        await _terminal(life, pending_id)
        clock.advance(HOUR)
        assert await life.app.deadlines.fire_due(None) == 0, "nothing is left to fire"

        prompts = _resume_prompts(life)
        assert len(prompts) == 1 and "SQLite" in prompts[0]
        assert (await life.store.find_deadlines([pending_id]))[pending_id].next_due_at is None


async def test_default_without_a_default_option_skips(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, DEFAULT_1H, clock) as life:
        _, session_id = await life.start_session()
        pending_id = await _detach(life, session_id, ASK_DB)

        clock.advance(HOUR)
        await _terminal(life, pending_id)

        rows = (await life.bundle(pending_id)).rows
        assert [r.metadata["status"] for r in rows] == ["rejected"]
        assert _resume_prompts(life) == []


async def test_keep_waits_on_and_writes_no_deadline(store_url: str) -> None:
    clock = ShiftedClock()
    keep = policy(expire="1h", on_expiry=OnExpiry.KEEP)
    async with waiting_lifecycle(store_url, keep, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id, {**ASK_DB, "expires_in": "1m"})

        clock.advance(48 * HOUR)
        assert await life.app.deadlines.fire_due(None) == 0

        assert not call.done() and await life.state(pending_id) == "active_live"
        assert await life.store.find_deadlines([pending_id]) == {}
        assert MetaKey.WAITING not in (await life.bundle(pending_id)).rows[0].metadata
        call.cancel()


async def test_a_question_without_a_policy_is_asked_and_answered_as_before(
    store_url: str,
) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, None, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        clock.advance(48 * HOUR)
        assert await life.app.deadlines.fire_due(None) == 0
        assert await life.state(pending_id) == "active_live"

        await life.app.services.resolver.respond(pending_id, answer_db("postgres"))
        await asyncio.wait_for(call, 30)

        rows = (await life.bundle(pending_id)).rows
        assert await life.store.find_deadlines([pending_id]) == {}
        assert not {MetaKey.WAITING, MetaKey.ANSWERED_BY} & set(rows[0].metadata)


async def test_expires_in_shortens_the_policy(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, SKIP_1H, clock) as life:
        _, session_id = await life.start_session()
        call, _ = await life.ask(session_id, {**ASK_DB, "expires_in": "10m"})

        clock.advance(600)
        result = json.loads(await asyncio.wait_for(call, 30))

        assert result == {"rejected": True, "reject_reason": "No answer within 10m"}


async def test_an_expiry_the_agent_refused_is_restored_and_fires_again(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, DEFAULT_1H, clock) as life:
        _, session_id = await life.start_session()
        pending_id = await _detach(life, session_id, ASK_DEFAULT)
        life.runtime.refuse_prompts = True
        first = (await life.store.find_deadlines([pending_id]))[pending_id].scheduled_expiry
        assert first is not None

        clock.advance(HOUR)

        async def reopened() -> bool:
            record = (await life.store.find_deadlines([pending_id]))[pending_id]
            return record.scheduled_expiry is not None and record.scheduled_expiry > first

        await eventually(reopened)
        assert await life.state(pending_id) == "active_detached", "the claim was restored"
        read = await life.app.services.reads.bundle(pending_id)
        assert read["answered_by"] is None
        record = (await life.store.find_deadlines([pending_id]))[pending_id]
        assert record.expired_at is None and record.next_due_at is not None
        life.runtime.refuse_prompts = False
        clock.advance(5)
        await _terminal(life, pending_id)
        assert len(_resume_prompts(life)) == 1
        assert (await life.app.services.reads.bundle(pending_id))["answered_by"] == "policy"
