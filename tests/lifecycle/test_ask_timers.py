"""The asker's timers on a manual clock: keep-alives at their interval while the person has
not answered, and the wait limit that detaches the question, each at exactly its time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from clarion.domain.errors import QuestionDetached
from clarion.domain.prompts import DETACHED_TOOL_ERROR
from tests.lifecycle.harness import Lifecycle, ManualTimers, answer_db, running_lifecycle

WAIT_S = 100.0
KEEPALIVE_S = 20.0


@pytest.fixture
def timers() -> ManualTimers:
    return ManualTimers()


@pytest.fixture
async def life(store_url: str, timers: ManualTimers) -> AsyncIterator[Lifecycle]:
    async with running_lifecycle(
        store_url, clock=timers, clarification_wait=WAIT_S, keepalive=KEEPALIVE_S
    ) as lifecycle:
        yield lifecycle


async def _tick(timers: ManualTimers, life: Lifecycle, seconds: float) -> None:
    """Advance once the asker sleeps, then until it sleeps again (it acted on the tick)."""
    await timers.wait_for_sleepers()
    timers.advance(seconds)
    await life.settle()


async def _keepalives(life: Lifecycle, count: int) -> None:
    async def reached() -> None:
        while len(life.keepalives) < count:  # noqa: ASYNC110
            await asyncio.sleep(0.001)

    await asyncio.wait_for(reached(), 10)


async def test_keepalives_follow_the_interval_while_waiting(
    life: Lifecycle, timers: ManualTimers
) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)

    await _tick(timers, life, KEEPALIVE_S - 1)
    assert life.keepalives == []
    await _tick(timers, life, 1)
    await _keepalives(life, 1)
    await _tick(timers, life, KEEPALIVE_S)
    await _keepalives(life, 2)
    assert len(life.keepalives) == 2

    await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))
    assert "sqlite" in await asyncio.wait_for(call, 10)
    assert await life.state(pending_id) == "terminal"


async def test_wait_limit_detaches_the_question_at_exactly_its_time(
    life: Lifecycle, timers: ManualTimers
) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    for n in range(1, 5):  # 80 s of keep-alives: still waiting
        await _tick(timers, life, KEEPALIVE_S)
        await _keepalives(life, n)
    assert not call.done()
    await _tick(timers, life, WAIT_S - 4 * KEEPALIVE_S - 0.5)
    assert not call.done(), "half a second before the limit the waiter still holds the call"

    await _tick(timers, life, 0.5)

    with pytest.raises(QuestionDetached) as raised:
        await asyncio.wait_for(call, 10)
    assert raised.value.message == DETACHED_TOOL_ERROR
    assert await life.state(pending_id) == "active_detached"
    bundle = await life.bundle(pending_id)
    assert all(row.metadata.get("agent_disconnected") is True for row in bundle.rows)
