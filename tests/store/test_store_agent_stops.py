"""Store contract: the durable record of an agent stopped while its session was idle, whose
write is the stop's guard. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from clarion.domain.agent_process import AGENT_STOPPED, stopped_while_idle
from clarion.domain.models import Session, SessionState

from .conftest import World


async def _idle(world: World, state: SessionState = SessionState.IDLE) -> Session:
    session = await world.session()
    turn = await world.turn(session)
    assert await world.store.complete_turn(turn.id)
    moved = await world.store.transition_session(session.id, state)
    assert moved is not None
    return moved


async def test_an_idle_session_records_its_agent_stopped_while_idle(world: World) -> None:
    session = await _idle(world)
    world.clock.advance(5)

    stopped = await world.store.mark_agent_stopped(session.id)

    assert stopped is not None
    assert stopped_while_idle(stopped)
    assert stopped.state is SessionState.IDLE
    assert stopped.metadata[AGENT_STOPPED]["at"] == world.clock.now().isoformat()
    assert stopped_while_idle(await world.store.get_session(session.id))


async def test_a_session_waiting_for_a_detached_answer_may_have_its_agent_stopped(
    world: World,
) -> None:
    session = await _idle(world, SessionState.WAITING_FOR_INPUT)
    assert await world.store.mark_agent_stopped(session.id) is not None


async def test_an_open_turn_keeps_the_agent_running(world: World) -> None:
    session = await _idle(world)
    await world.turn(session)  # a prompt's turn committed just before the stop

    assert await world.store.mark_agent_stopped(session.id) is None
    assert not stopped_while_idle(await world.store.get_session(session.id))


async def test_a_running_starting_or_ended_session_is_not_marked(world: World) -> None:
    for state in (SessionState.RUNNING, SessionState.STARTING, SessionState.COMPLETED):
        session = await _idle(world)
        await world.store.transition_session(session.id, state)
        assert await world.store.mark_agent_stopped(session.id) is None, state


async def test_starting_again_clears_the_record_once(world: World) -> None:
    session = await _idle(world)
    assert await world.store.mark_agent_stopped(session.id) is not None

    assert await world.store.clear_agent_stopped(session.id)
    assert not await world.store.clear_agent_stopped(session.id)
    cleared = await world.store.get_session(session.id)
    assert AGENT_STOPPED not in cleared.metadata


async def test_the_record_keeps_the_other_session_metadata(world: World) -> None:
    session = await _idle(world)
    assert await world.store.remember_acp_session(session.id, "acp-1")
    await world.store.mark_agent_stopped(session.id)
    await world.store.clear_agent_stopped(session.id)
    assert (await world.store.get_session(session.id)).metadata == {"acp_session_id": "acp-1"}
