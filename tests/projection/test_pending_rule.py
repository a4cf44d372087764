"""The per-session pending_action projection follows the repository rule, never event payloads;
the task level ranks permission above clarification; legacy task fields."""

from __future__ import annotations

import dataclasses

from clarion.domain.models import PendingAction, SessionState
from clarion.projection.summaries import task_level_action, task_pending
from tests.projection.builders import World, projections
from tests.whole_store import WholeStore


async def test_a_pending_bundle_in_the_current_turn_projects_clarification(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    assert (await p.projector.project_one(session.id)).pending_action is PendingAction.CLARIFICATION


async def test_a_newer_conversational_turn_supersedes_the_bundle(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    await world.turn(session.id)
    assert (await p.projector.project_one(session.id)).pending_action is None


async def test_a_newer_lifecycle_turn_is_never_current_turn_authority(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    await world.turn(session.id, lifecycle_only=True)
    assert (await p.projector.project_one(session.id)).pending_action is (
        PendingAction.CLARIFICATION
    )


async def test_a_terminal_session_projects_none_even_with_pending_rows(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    await world.permission(session.id)
    assert await store.transition_session(session.id, SessionState.FAILED)
    assert (await p.projector.project_one(session.id)).pending_action is None


async def test_clarification_beats_permission_inside_a_session(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.permission(session.id)
    await world.ask(session.id)
    assert (await p.projector.project_one(session.id)).pending_action is (
        PendingAction.CLARIFICATION
    )


async def test_a_pending_permission_alone_projects_permission(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.permission(session.id)
    assert (await p.projector.project_one(session.id)).pending_action is PendingAction.PERMISSION


async def test_an_answered_bundle_projects_clean(store: WholeStore, world: World) -> None:
    p = await projections(store)
    session = await world.session()
    await world.answer(await world.ask(session.id))
    assert (await p.projector.project_one(session.id)).pending_action is None


async def test_permission_beats_clarification_at_task_level(
    store: WholeStore, world: World
) -> None:
    task = await world.task()
    asking = await world.session(task.id)
    permitting = await world.session(task.id, primary=False)
    await world.ask(asking.id)
    await world.permission(permitting.id)
    pending = task_pending(await store.summary_inputs(task.id))
    assert pending.task_action is PendingAction.PERMISSION
    assert task_level_action({"a": PendingAction.CLARIFICATION, "b": None}) is (
        PendingAction.CLARIFICATION
    )
    assert task_level_action({"a": None}) is None


async def test_event_payload_never_decides_the_projection(store: WholeStore, world: World) -> None:
    """An event about a row whose payload says `pending` carries the repository's answer."""
    p = await projections(store)
    session = await world.session()
    rows = await world.ask(session.id)
    await world.answer(rows)
    stale = dataclasses.replace(rows[0], metadata={**rows[0].metadata, "status": "pending"})
    await p.publisher.message("updated", stale)
    (event,) = p.bus.messages_of(session.id)
    assert event.payload["metadata"]["status"] == "pending"
    assert event.payload["pending_action"] is None


async def test_the_session_list_projects_each_session_with_one_revision(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    task = await world.task()
    asking = await world.session(task.id)
    clean = await world.session(task.id, primary=False)
    await world.ask(asking.id)
    rows = {row["id"]: row for row in await p.reads.sessions(task.id)}
    assert rows[asking.id]["pending_action"] == "clarification"
    assert rows[clean.id]["pending_action"] is None
    assert rows[asking.id]["pending_action_revision"] == rows[clean.id]["pending_action_revision"]
    assert rows[asking.id]["pending_action_revision"]["epoch"] == str(p.projector.epoch)


# ----------------------------------------------------------------------------- legacy fields


async def test_primary_session_pending_action_only_while_primary_waits_for_input(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    task = await world.task()
    primary = await world.session(task.id, state=SessionState.RUNNING)
    await world.ask(primary.id)
    running = await p.reads.task(task.id)
    assert running["primary_session_pending_action"] is None
    assert running["task_pending_action"] == "clarification"

    assert await store.transition_session(primary.id, SessionState.WAITING_FOR_INPUT)
    waiting = await p.reads.task(task.id)
    assert waiting["primary_session_pending_action"] == "clarification"
    assert waiting["task_pending_action"] == "clarification"


async def test_task_pending_action_counts_only_running_or_waiting_sessions(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    task = await world.task()
    idle = await world.session(task.id, state=SessionState.IDLE)
    await world.ask(idle.id)
    view = await p.reads.task(task.id)
    # The summary still advertises the idle session's question; the legacy field does not.
    assert view["status_summary"]["pending_action"] == "clarification"
    assert view["task_pending_action"] is None
    assert view["primary_session_pending_action"] is None

    waiting = await world.session(task.id, state=SessionState.WAITING_FOR_INPUT, primary=False)
    await world.permission(waiting.id)
    view = await p.reads.task(task.id)
    assert view["task_pending_action"] == "permission"
    assert view["primary_session_pending_action"] is None  # not the primary session
    assert view["status_summary"]["pending_action"] == "permission"


async def test_legacy_fields_are_present_and_null_when_clean(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    task = await world.task()
    await world.session(task.id)
    view = await p.reads.task(task.id)
    assert view["primary_session_pending_action"] is None
    assert view["task_pending_action"] is None
    assert "status_summary_invalidated" not in view
