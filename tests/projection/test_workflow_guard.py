"""The workflow guard: no move while any session of the task has an active clarification, and
none when the repository cannot say (fail closed)."""

from __future__ import annotations

import pytest

from clarion.domain import lifecycle
from clarion.domain.errors import PendingInput
from clarion.domain.models import SessionState, WorkflowStep
from tests.projection.builders import FailingStore, World, projections
from tests.whole_store import WholeStore


async def test_a_live_clarification_in_any_session_refuses_the_move(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    task = await world.task()
    await world.session(task.id)
    asking = await world.session(task.id, primary=False)
    await world.ask(asking.id)
    with pytest.raises(PendingInput) as refused:
        await p.guard.move(task.id, WorkflowStep.REVIEW)
    assert refused.value.code == "pending_input"
    assert (await store.get_task(task.id)).workflow_step is WorkflowStep.BACKLOG


async def test_a_detached_clarification_refuses_the_move(store: WholeStore, world: World) -> None:
    p = await projections(store)
    session = await world.session(state=SessionState.IDLE)
    await world.ask(session.id)
    assert await store.transition_session_bundles(session.id, lifecycle.DETACH)
    with pytest.raises(PendingInput):
        await p.guard.move(session.task_id, WorkflowStep.DONE)


async def test_superseded_terminal_and_answered_bundles_do_not_block(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    task = await world.task()
    superseded = await world.session(task.id)
    await world.ask(superseded.id)
    await world.turn(superseded.id)
    ended = await world.session(task.id, primary=False)
    await world.ask(ended.id)
    assert await store.transition_session(ended.id, SessionState.CANCELLED)
    answered = await world.session(task.id, primary=False)
    await world.answer(await world.ask(answered.id))

    moved = await p.guard.move(task.id, WorkflowStep.IN_PROGRESS)
    assert moved.workflow_step is WorkflowStep.IN_PROGRESS


async def test_a_lifecycle_turn_does_not_unblock_the_move(store: WholeStore, world: World) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    await world.turn(session.id, lifecycle_only=True)
    with pytest.raises(PendingInput):
        await p.guard.move(session.task_id, WorkflowStep.REVIEW)


async def test_a_failing_repository_read_refuses_the_move(store: WholeStore, world: World) -> None:
    wrapped = FailingStore(store)
    p = await projections(wrapped)
    session = await world.session()
    wrapped.fail["sessions_with_active_clarification"] = OSError("database went away")
    with pytest.raises(OSError, match="went away"):
        await p.guard.move(session.task_id, WorkflowStep.DONE)
    assert wrapped.calls.get("set_task_step") is None
    assert (await store.get_task(session.task_id)).workflow_step is WorkflowStep.BACKLOG
