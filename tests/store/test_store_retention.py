"""Store contract: pruning what finished long ago never touches a task with anything alive,
even when an answer races the prune."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from clarion.domain.models import SessionState
from clarion.store.retention import prune

from .conftest import World


async def test_a_prune_racing_an_answer_leaves_the_answered_task_whole(world: World) -> None:
    # Task T: an old finished session, and a live one whose agent waits for an answer.
    old = await world.session()
    assert await world.store.transition_session(old.id, SessionState.COMPLETED) is not None
    live = await world.session(task_id=old.task_id)
    turn = await world.turn(live)
    rows = await world.bundle(live, ("db",), turn_id=turn.id)
    pending_id = str(rows[0].metadata["pending_id"])
    # Task U: only old finished work, which the prune must take.
    lone = await world.session()
    assert await world.store.transition_session(lone.id, SessionState.FAILED) is not None
    world.clock.advance(timedelta(days=100).total_seconds())
    cutoff = world.clock.now() - timedelta(days=90)

    pruned, claim = await asyncio.gather(
        prune(world.store.stores.retention, cutoff), world.answer(pending_id, "db")
    )

    assert [row.id for row in claim.claimed] == [rows[0].id]
    assert pruned.sessions == 1
    remaining = {s.id for s in await world.store.list_sessions(old.task_id)}
    assert remaining == {old.id, live.id}
    assert await world.store.list_sessions(lone.task_id) == []
    # Once nothing of T is alive its old session goes; the one that just ended waits for
    # the cutoff to pass it.
    assert await world.store.transition_session(live.id, SessionState.COMPLETED) is not None
    assert (await prune(world.store.stores.retention, cutoff)).sessions == 1
    assert [s.id for s in await world.store.list_sessions(old.task_id)] == [live.id]
    world.clock.advance(timedelta(days=91).total_seconds())
    later = await prune(world.store.stores.retention, world.clock.now() - timedelta(days=90))
    assert (later.sessions, later.turns, later.messages) == (1, 1, 1)


async def test_prune_deletes_in_batches_and_reports_progress(world: World) -> None:
    for _ in range(5):
        session = await world.session()
        await world.turn(session)
        await world.say(session)
        assert await world.store.transition_session(session.id, SessionState.CANCELLED)
    world.clock.advance(10.0)
    seen: list[tuple[int, int]] = []

    dry = await prune(world.store.stores.retention, world.clock.now(), dry_run=True, batch=2)
    assert (dry.sessions, dry.messages) == (5, 5)
    done = await prune(
        world.store.stores.retention,
        world.clock.now(),
        batch=2,
        progress=lambda d, t: seen.append((d, t)),
    )

    assert (done.sessions, done.messages) == (5, 5)
    assert seen == [(2, 5), (4, 5), (5, 5)]
    assert await world.store.prunable_sessions(world.clock.now()) == []
