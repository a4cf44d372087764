"""The primary-answer watchdog: armed inside the live confirmation, cancelled by agent
activity, and on silence a single replacement hand-off that respects turn authority.

Time is a manual clock: the watchdog fires exactly when a test advances it past the limit, and
a test that expects nothing to happen advances well past it and lets the loop run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.lifecycle.harness import (
    Lifecycle,
    ManualTimers,
    answer_db,
    lifecycle_with_failing_store,
    running_lifecycle,
)

RESUME = "You previously asked the user:"
WATCHDOG_S = 15.0


@pytest.fixture
def timers() -> ManualTimers:
    return ManualTimers()


@pytest.fixture
async def life(store_url: str, timers: ManualTimers) -> AsyncIterator[Lifecycle]:
    async with running_lifecycle(store_url, clock=timers, watchdog=WATCHDOG_S) as lifecycle:
        yield lifecycle


async def answered_live(life: Lifecycle) -> tuple[str, str]:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))
    await asyncio.wait_for(call, 5)
    return session_id, pending_id


async def fire(timers: ManualTimers, life: Lifecycle) -> None:
    """Move time past the watchdog limit and let whatever it woke run to rest."""
    timers.advance(WATCHDOG_S + 1)
    await life.settle()
    await life.app.stores.reads.list_tasks()  # one round trip to the store for woken work to use
    await life.settle()


async def wait_for(predicate: object, within: float = 60) -> None:
    async def poll() -> None:
        while not predicate():  # type: ignore[operator]  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), within)


async def test_watchdog_is_armed_before_the_agent_gets_the_answer(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id)
    await life.app.services.resolver.respond(pending_id, answer_db())

    await asyncio.wait_for(call, 5)

    watches = life.app.watchdogs.armed(session_id)
    assert [w.pending_id for w in watches] == [pending_id]


async def test_agent_activity_cancels_the_watchdog(life: Lifecycle, timers: ManualTimers) -> None:
    session_id, _ = await answered_live(life)

    await life.runtime.say(session_id, "You answered: sqlite")

    assert life.app.watchdogs.armed(session_id) == []
    await fire(timers, life)
    assert life.runtime.cancels == [], "no fallback after the agent spoke"


async def test_silent_agent_gets_the_answer_again_as_one_replacement_prompt(
    life: Lifecycle, timers: ManualTimers
) -> None:
    session_id, _ = await answered_live(life)
    clarification_turn = await life.store.find_current_turn(session_id)
    await timers.wait_for_sleepers()
    timers.advance(WATCHDOG_S - 0.5)
    await life.settle()
    assert life.runtime.cancels == [], "silent, but not yet for the whole limit"

    timers.advance(0.5)
    await life.runtime.wait_for_prompts(2, within=60)

    assert life.runtime.cancels == [session_id], "the silent prompt was cancelled first"
    replacement = life.runtime.prompts[1][1]
    assert replacement.startswith(RESUME) and "SQLite" in replacement
    current = await life.store.find_current_turn(session_id)
    assert current is not None and clarification_turn is not None
    assert current.id != clarification_turn.id
    await fire(timers, life)
    assert len(life.runtime.prompts) == 2, "handed off exactly once"


async def test_successor_turn_prevents_the_stale_hand_off(
    store_url: str, timers: ManualTimers
) -> None:
    async with lifecycle_with_failing_store(store_url, clock=timers, watchdog=WATCHDOG_S) as (
        life,
        failing,
    ):
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)

        async def newer_work() -> None:
            # Newer work becomes current right as the answer is confirmed, before the
            # watchdog can fire.
            await life.store.create_turn(session_id)

        failing.after["confirm_delivery"] = newer_work
        await life.app.services.resolver.respond(pending_id, answer_db())
        await asyncio.wait_for(call, 5)
        await timers.wait_for_sleepers()
        await fire(timers, life)
        await wait_for(lambda: not life.app.watchdogs.armed(session_id))

        assert life.runtime.cancels == []
        assert len(life.runtime.prompts) == 1


async def test_own_cancellation_acknowledgement_does_not_cancel_recovery(
    life: Lifecycle, timers: ManualTimers
) -> None:
    _session_id, _ = await answered_live(life)
    await timers.wait_for_sleepers()
    timers.advance(WATCHDOG_S)

    # The scripted runtime emits a cancel_ack for the generation the fallback cancels.
    await life.runtime.wait_for_prompts(2, within=60)

    assert life.runtime.prompts[1][1].startswith(RESUME)


async def test_independent_activity_during_the_cancellation_cancels_recovery(
    life: Lifecycle, timers: ManualTimers
) -> None:
    life.runtime.cancel_chatter = "still thinking"
    session_id, _ = await answered_live(life)
    await timers.wait_for_sleepers()
    timers.advance(WATCHDOG_S)

    await wait_for(lambda: life.runtime.cancels)
    await wait_for(lambda: not life.app.watchdogs.armed(session_id))
    await fire(timers, life)

    assert len(life.runtime.prompts) == 1, "the agent spoke, so no replacement hand-off"


async def test_shutdown_cancels_armed_watchdogs(life: Lifecycle, timers: ManualTimers) -> None:
    _session_id, _ = await answered_live(life)

    life.app.watchdogs.cancel_all()
    await fire(timers, life)

    assert life.runtime.cancels == []
    assert len(life.runtime.prompts) == 1
