"""Idle agents stop after their profile's `agent_idle_stop_after` and start again on the next
prompt. The real services on a real database (SQLite and PostgreSQL) with a scripted agent
runtime; time is a manual clock, so the stop happens exactly when a test moves time past it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

import pytest

from clarion.config import builtin_profile
from clarion.domain.agent_process import AGENT_STOPPED, IDLE_NOTE
from clarion.domain.models import MessageType, SessionState
from clarion.runtime.clock import ManualClock
from clarion.store import Stores
from tests.lifecycle.harness import (
    FailingStore,
    Lifecycle,
    answer_db,
    detached_question,
    fast_settings,
    lifecycle_on,
)
from tests.whole_store import whole_of

STOP_AFTER = 60.0
RESUME = "You previously asked the user:"


def _settings(store_url: str, stop_after: float) -> object:
    settings = fast_settings(store_url)
    agent = dataclasses.replace(builtin_profile(), idle_stop_after=stop_after)
    return dataclasses.replace(settings, agents={"builtin": agent})


@contextlib.asynccontextmanager
async def _life(
    store_url: str, clock: ManualClock, stop_after: float = STOP_AFTER
) -> AsyncIterator[Lifecycle]:
    async with lifecycle_on(_settings(store_url, stop_after), clock=clock) as life:  # type: ignore[arg-type]
        yield life


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def life(store_url: str, clock: ManualClock) -> AsyncIterator[Lifecycle]:
    async with _life(store_url, clock) as lifecycle:
        yield lifecycle


async def _idle_session(life: Lifecycle) -> str:
    _, session_id = await life.start_session()
    await life.runtime.end_turn(session_id)
    return session_id


async def _pass(clock: ManualClock, life: Lifecycle, seconds: float) -> None:
    """Move time and let what it woke (the stop's reads and writes) run to rest."""
    await clock.wait_for_sleepers()
    clock.advance(seconds)
    for _ in range(3):
        await life.settle()
        await life.app.stores.reads.list_tasks()  # a store round trip for the woken work to use
    await life.settle()


async def _until_stopped(life: Lifecycle, session_id: str, within: float = 60) -> None:
    async def poll() -> None:
        while life.runtime.is_running(session_id):  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), within)


async def _read(life: Lifecycle, session_id: str) -> dict[str, object]:
    return await life.app.services.reads.session(session_id)


async def test_an_idle_agent_stops_after_its_profiles_idle_time(
    life: Lifecycle, clock: ManualClock
) -> None:
    session_id = await _idle_session(life)
    assert (await _read(life, session_id))["agent_process"] == "running"

    await _pass(clock, life, STOP_AFTER - 1)
    assert life.runtime.is_running(session_id), "not idle long enough yet"

    await _pass(clock, life, 2)
    await _until_stopped(life, session_id)

    read = await _read(life, session_id)
    assert read["agent_process"] == "stopped"
    assert read["agent_process_note"] == IDLE_NOTE
    assert read["state"] == "IDLE", "a stop by Clarion is no failure"
    assert read["error"] is None
    messages = await life.store.recent_messages(session_id, 50)
    assert not [m for m in messages if m.type == MessageType.ERROR]


async def test_the_next_prompt_starts_the_stopped_agent_with_its_session_loaded(
    life: Lifecycle, clock: ManualClock
) -> None:
    session_id = await _idle_session(life)
    await _pass(clock, life, STOP_AFTER + 1)
    await _until_stopped(life, session_id)

    turn_id, queued = await life.app.services.admission.submit(session_id, "again")

    assert not queued and turn_id is not None
    assert life.runtime.is_running(session_id)
    _, again = life.runtime.launches
    assert again.acp_session_id == f"acp-{session_id}", "the recorded ACP session is loaded"
    assert life.runtime.prompts[-1][1] == "again", "a loaded session needs no recap"
    turns = await life.store.list_visible_turns(session_id)
    starts = [t for t in turns if t.metadata.get("lifecycle_only")]
    assert len(starts) == 2, "each start records a lifecycle turn"
    assert starts[-1].metadata["agent_context"] == "loaded"
    read = await _read(life, session_id)
    assert read["agent_process"] == "running" and read["agent_process_note"] is None
    assert AGENT_STOPPED not in (await life.store.get_session(session_id)).metadata


async def test_a_detached_answer_starts_the_stopped_agent_and_resumes_once(
    life: Lifecycle, clock: ManualClock
) -> None:
    _, session_id = await life.start_session()
    pending_id = await detached_question(life, session_id)
    await _pass(clock, life, STOP_AFTER + 1)
    await _until_stopped(life, session_id)
    assert (await life.store.get_session(session_id)).state is SessionState.WAITING_FOR_INPUT

    result = await life.app.services.resolver.respond(pending_id, answer_db("sqlite"))

    assert result.resumed is True
    assert life.runtime.is_running(session_id)
    assert [t for _, t, _ in life.runtime.prompts if t.startswith(RESUME)] != []
    assert len([t for _, t, _ in life.runtime.prompts if t.startswith(RESUME)]) == 1
    assert len(life.runtime.launches) == 2


async def test_idle_time_counts_from_the_end_of_the_last_turn(
    life: Lifecycle, clock: ManualClock
) -> None:
    _, session_id = await life.start_session()
    await _pass(clock, life, 50)  # a turn running for 50 s
    await life.runtime.end_turn(session_id)

    await _pass(clock, life, 50)  # 100 s after the start, 50 s idle
    assert life.runtime.is_running(session_id)

    await _pass(clock, life, 11)
    await _until_stopped(life, session_id)


async def test_a_running_turn_or_a_live_question_keeps_the_agent(
    life: Lifecycle, clock: ManualClock
) -> None:
    _, busy = await life.start_session()
    asking = await _idle_session(life)
    await life.app.services.admission.submit(asking, "ask me")
    call, _ = await life.ask(asking)

    for _ in range(3):
        await _pass(clock, life, STOP_AFTER * 2)

    assert life.runtime.is_running(busy)
    assert life.runtime.is_running(asking)
    call.cancel()


async def test_a_pending_permission_request_keeps_the_agent(
    life: Lifecycle, clock: ManualClock
) -> None:
    session_id = await _idle_session(life)
    permissions = life.app.services.permissions
    assert permissions is not None
    # A request this process wrote and nothing settled yet, as while a person decides.
    permissions._unsettled.add(session_id)

    await _pass(clock, life, STOP_AFTER * 2)
    assert life.runtime.is_running(session_id)

    permissions._unsettled.discard(session_id)
    await _pass(clock, life, STOP_AFTER * 2)
    await _until_stopped(life, session_id)


async def test_zero_never_stops_an_agent(store_url: str, clock: ManualClock) -> None:
    async with _life(store_url, clock, stop_after=0) as life:
        session_id = await _idle_session(life)
        clock.advance(365 * 86400)
        await life.settle()

        assert life.runtime.is_running(session_id)
        assert clock.sleepers == 0, "no timer is armed"
        assert (await _read(life, session_id))["agent_process"] == "running"


@contextlib.asynccontextmanager
async def _life_with_store(
    store_url: str, clock: ManualClock
) -> AsyncIterator[tuple[Lifecycle, FailingStore]]:
    holder: dict[str, FailingStore] = {}

    def wrap(stores: Stores) -> Stores:
        holder["store"] = failing = FailingStore(whole_of(stores))
        return failing.wrapping(stores)

    settings = _settings(store_url, STOP_AFTER)
    async with lifecycle_on(settings, store_wrapper=wrap, clock=clock) as life:  # type: ignore[arg-type]
        yield life, holder["store"]


def _hold(store: FailingStore, method: str) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold `method` until released; returns (reached, release)."""
    reached, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        reached.set()
        await release.wait()

    store.before[method] = hold
    return reached, release


def _resumes(life: Lifecycle) -> list[str]:
    return [text for _, text, _ in life.runtime.prompts if text.startswith(RESUME)]


async def test_an_answer_arriving_while_the_idle_stop_runs_restarts_the_agent_and_resumes_once(
    store_url: str, clock: ManualClock
) -> None:
    async with _life_with_store(store_url, clock) as (life, store):
        _, session_id = await life.start_session()
        pending_id = await detached_question(life, session_id)
        reached, release = _hold(store, "mark_agent_stopped")
        await _pass(clock, life, STOP_AFTER + 1)
        await asyncio.wait_for(reached.wait(), 10)  # the stop holds the lane

        answering = asyncio.create_task(
            life.app.services.resolver.respond(pending_id, answer_db("sqlite"))
        )
        await life.settle()
        assert not answering.done(), "the resume waits for the stop"
        release.set()
        result = await asyncio.wait_for(answering, 10)

        assert result.resumed is True
        assert len(_resumes(life)) == 1
        assert life.runtime.is_running(session_id), "the agent ends up running"
        assert len(life.runtime.launches) == 2, "stopped once, started again once"
        assert AGENT_STOPPED not in (await life.store.get_session(session_id)).metadata
        assert (await _read(life, session_id))["agent_process"] == "running"


async def test_an_answer_holding_the_lane_first_keeps_the_agent_from_stopping(
    store_url: str, clock: ManualClock
) -> None:
    async with _life_with_store(store_url, clock) as (life, store):
        _, session_id = await life.start_session()
        pending_id = await detached_question(life, session_id)
        reached, release = _hold(store, "reserve_successor")
        answering = asyncio.create_task(
            life.app.services.resolver.respond(pending_id, answer_db("sqlite"))
        )
        await asyncio.wait_for(reached.wait(), 10)  # the resume holds the lane

        await _pass(clock, life, STOP_AFTER + 1)  # the stop looks, and waits for the lane
        release.set()
        result = await asyncio.wait_for(answering, 10)
        await _pass(clock, life, 0)

        assert result.resumed is True
        assert len(_resumes(life)) == 1
        assert life.runtime.is_running(session_id)
        assert len(life.runtime.launches) == 1, "never stopped"
        assert AGENT_STOPPED not in (await life.store.get_session(session_id)).metadata


async def test_an_answer_and_the_idle_stop_at_the_same_moment_resume_once_and_leave_it_running(
    store_url: str, clock: ManualClock
) -> None:
    async with _life_with_store(store_url, clock) as (life, _):
        _, session_id = await life.start_session()
        pending_id = await detached_question(life, session_id)
        await clock.wait_for_sleepers()

        async def stop_now() -> None:
            clock.advance(STOP_AFTER + 1)
            await life.settle()

        result, _ = await asyncio.gather(
            life.app.services.resolver.respond(pending_id, answer_db("sqlite")), stop_now()
        )
        await _pass(clock, life, 0)

        assert result.resumed is True
        assert len(_resumes(life)) == 1
        assert life.runtime.is_running(session_id)
