"""Store contract: pending-action projections, summary compare-and-set, projection epochs."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from clarion.domain.models import MessageType, PendingAction, SessionState
from clarion.ports import NewMessage
from clarion.store import CorruptEpochError
from clarion.store.db.schema import kandev_meta

from .conftest import World


async def _permission(world: World, session_id: str, status: str) -> None:
    await world.store.add_message(
        NewMessage(
            session_id, "agent", MessageType.PERMISSION_REQUEST, "may I?", {"status": status}
        )
    )


async def test_pending_actions_reports_clarification_permission_and_clean(world: World) -> None:
    clarifying = await world.session()
    permitting = await world.session()
    clean = await world.session()
    for session in (clarifying, permitting, clean):
        await world.turn(session)
    await world.bundle(clarifying)
    await _permission(world, clarifying.id, "pending")
    await _permission(world, permitting.id, "pending")
    result = await world.store.pending_actions([clarifying.id, permitting.id, clean.id, "nope"])
    assert result == {
        clarifying.id: PendingAction.CLARIFICATION,
        permitting.id: PendingAction.PERMISSION,
        clean.id: None,
        "nope": None,
    }


async def test_only_the_newest_current_turn_permission_request_counts(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await _permission(world, session.id, "pending")
    world.clock.advance(1)
    await _permission(world, session.id, "approved")
    assert await world.store.pending_actions([session.id]) == {session.id: None}


async def test_the_newest_permission_decides_per_session_in_one_batched_read(
    world: World,
) -> None:
    answered_last = await world.session()
    asked_last = await world.session()
    old_turn_only = await world.session()
    for session in (answered_last, asked_last, old_turn_only):
        await world.turn(session)
    await _permission(world, answered_last.id, "pending")
    await _permission(world, asked_last.id, "approved")
    await _permission(world, old_turn_only.id, "pending")
    world.clock.advance(1)
    await _permission(world, answered_last.id, "approved")
    await _permission(world, asked_last.id, "pending")
    await world.turn(old_turn_only)  # its pending permission is now history

    result = await world.store.pending_actions([answered_last.id, asked_last.id, old_turn_only.id])

    assert result == {
        answered_last.id: None,
        asked_last.id: PendingAction.PERMISSION,
        old_turn_only.id: None,
    }


async def test_superseded_and_terminal_sessions_project_clean(world: World) -> None:
    superseded = await world.session()
    await world.turn(superseded)
    await world.bundle(superseded)
    await world.turn(superseded)
    terminal = await world.session()
    await world.turn(terminal)
    await world.bundle(terminal)
    await world.store.transition_session(terminal.id, SessionState.COMPLETED)
    result = await world.store.pending_actions([superseded.id, terminal.id])
    assert result == {superseded.id: None, terminal.id: None}


async def test_a_claimed_bundle_is_not_pending(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, pending_id="p")
    await world.answer("p", "db")
    assert await world.store.pending_actions([session.id]) == {session.id: None}


async def test_sessions_with_active_clarification_lists_only_live_pending_owners(
    world: World,
) -> None:
    first = await world.session()
    task_id = first.task_id
    second = await world.session(task_id=task_id)
    third = await world.session(task_id=task_id)
    for session in (first, second, third):
        await world.turn(session)
    await world.bundle(first)
    await world.bundle(third)
    await world.store.transition_session(third.id, SessionState.FAILED)
    assert await world.store.sessions_with_active_clarification(task_id) == [first.id]


async def test_cas_summary_creates_then_advances_the_revision(world: World) -> None:
    session = await world.session()
    task_id = session.task_id
    assert await world.store.find_summary(task_id) is None
    first = await world.store.cas_summary(task_id, expected_revision=None, data={"a": 1})
    assert first is not None
    assert first.revision == 1
    assert await world.store.cas_summary(task_id, expected_revision=None, data={"a": 2}) is None
    world.clock.advance(1)
    second = await world.store.cas_summary(
        task_id, expected_revision=1, data={"a": 1, "pending_action": "clarification", "x": [1]}
    )
    assert second is not None
    assert second.revision == 2
    stored = await world.store.find_summary(task_id)
    assert stored is not None
    assert stored.data == {"a": 1, "pending_action": "clarification", "x": [1]}
    assert stored.updated_at == world.clock.now()


async def test_cas_summary_with_a_stale_revision_writes_nothing(world: World) -> None:
    session = await world.session()
    task_id = session.task_id
    await world.store.cas_summary(task_id, expected_revision=None, data={"keep": "me"})
    await world.store.cas_summary(task_id, expected_revision=1, data={"keep": "me", "n": 2})
    assert await world.store.cas_summary(task_id, expected_revision=1, data={}) is None
    stored = await world.store.find_summary(task_id)
    assert stored is not None
    assert stored.revision == 2
    assert stored.data == {"keep": "me", "n": 2}


async def test_epochs_start_at_one_and_only_grow(world: World) -> None:
    assert [await world.store.next_epoch() for _ in range(3)] == [1, 2, 3]


@pytest.mark.parametrize("raw", ["banana", "", "0", "-4"])
async def test_a_corrupt_epoch_raises_instead_of_restarting(world: World, raw: str) -> None:
    await world.store.next_epoch()
    async with world.store.engine.begin() as conn:
        await conn.execute(update(kandev_meta).values(value=raw))
    with pytest.raises(CorruptEpochError):
        await world.store.next_epoch()


async def test_summary_inputs_read_summary_sessions_and_pending_together(world: World) -> None:
    asking = await world.session()
    quiet = await world.session(task_id=asking.task_id)
    other_task = await world.session()
    for session in (asking, quiet, other_task):
        await world.turn(session)
    await world.bundle(asking)
    await world.bundle(other_task)
    stored = await world.store.cas_summary(asking.task_id, expected_revision=None, data={"k": 1})

    inputs = await world.store.summary_inputs(asking.task_id)

    assert inputs.summary == stored
    assert [s.id for s in inputs.sessions] == [asking.id, quiet.id]
    assert inputs.sessions[0] == await world.store.get_session(asking.id)
    assert dict(inputs.actions) == {asking.id: PendingAction.CLARIFICATION, quiet.id: None}


async def test_summary_inputs_give_each_session_the_action_pending_actions_gives(
    world: World,
) -> None:
    both = await world.session()
    permitting = await world.session(task_id=both.task_id)
    decided = await world.session(task_id=both.task_id)
    clean = await world.session(task_id=both.task_id)
    sessions = (both, permitting, decided, clean)
    for session in sessions:
        await world.turn(session)
    await world.bundle(both)
    await _permission(world, both.id, "pending")
    # The newest request of the turn decides: an older one is history either way.
    await _permission(world, permitting.id, "approved")
    await _permission(world, decided.id, "pending")
    world.clock.advance(1)
    await _permission(world, permitting.id, "pending")
    await _permission(world, decided.id, "rejected")

    inputs = await world.store.summary_inputs(both.task_id)

    assert dict(inputs.actions) == {
        both.id: PendingAction.CLARIFICATION,
        permitting.id: PendingAction.PERMISSION,
        decided.id: None,
        clean.id: None,
    }
    assert dict(inputs.actions) == await world.store.pending_actions([s.id for s in sessions])
    assert [s.id for s in inputs.sessions] == [s.id for s in sessions]


async def test_summary_inputs_give_a_terminal_session_no_pending_action(world: World) -> None:
    ended = await world.session()
    await world.turn(ended)
    await world.bundle(ended)
    await world.store.transition_session(ended.id, SessionState.COMPLETED)

    inputs = await world.store.summary_inputs(ended.task_id)

    assert [s.id for s in inputs.sessions] == [ended.id]
    assert dict(inputs.actions) == {ended.id: None}
    assert dict(inputs.actions) == dict(await world.store.pending_actions([ended.id]))


async def test_summary_inputs_of_a_task_without_sessions_or_summary(world: World) -> None:
    workspace = await world.store.ensure_workspace("default")
    task = await world.store.create_task(title="t", description="", workspace_id=workspace.id)

    inputs = await world.store.summary_inputs(task.id)

    assert inputs.summary is None and inputs.sessions == () and dict(inputs.actions) == {}
