"""Task status summaries: compare-and-set from source events with a bounded retry, read repair
on task lists that keeps every key it does not own, invalidation when repair fails."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from clarion.domain.errors import SummaryConflict
from clarion.domain.models import SessionState, StatusSummary
from clarion.projection.summaries import CAS_ATTEMPTS
from clarion.runtime import failpoints
from clarion.runtime.clock import ManualClock
from tests.projection.builders import FailingStore, World, projections
from tests.whole_store import WholeStore

UNRELATED = {"foreground_activity": "idle", "zz_unknown": {"nested": [1, "two"]}, "git": None}


async def _seed(store: WholeStore, task_id: str, data: dict[str, Any]) -> StatusSummary:
    """Persist a summary as another writer (or an older process) left it."""
    current = await store.find_summary(task_id)
    written = await store.cas_summary(
        task_id, expected_revision=None if current is None else current.revision, data=data
    )
    assert written is not None
    return written


async def test_source_events_update_the_summary_only_on_a_semantic_change(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    rows = await world.ask(session.id)
    await p.publisher.messages("added", rows)
    asked = await store.find_summary(session.task_id)
    assert asked is not None and asked.data == {"pending_action": "clarification"}

    await p.publisher.message("added", await world.say(session.id))
    unchanged = await store.find_summary(session.task_id)
    assert unchanged is not None and unchanged.revision == asked.revision

    await p.publisher.messages("updated", await world.answer(rows))
    answered = await store.find_summary(session.task_id)
    assert answered is not None and answered.revision == asked.revision + 1
    assert "pending_action" not in answered.data
    revisions = [
        e.payload["status_summary"]["revision"] for e in p.bus.of("task.status_summary.updated")
    ]
    assert revisions == [asked.revision, answered.revision]


async def test_a_clean_task_without_a_summary_gets_none_written(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    assert await p.summaries.refresh(session.task_id) is None
    assert await store.find_summary(session.task_id) is None


async def test_a_lost_compare_and_set_reloads_reapplies_and_keeps_the_winners_fields(
    any_store: WholeStore, clock: ManualClock
) -> None:
    world = World(any_store, clock)
    wrapped = FailingStore(any_store)
    p = await projections(wrapped)
    session = await world.session()
    await _seed(any_store, session.task_id, {"foreground_activity": "idle"})
    await world.ask(session.id)

    async def concurrent_writer() -> None:
        if wrapped.calls["cas_summary"] == 1:
            await _seed(any_store, session.task_id, {"foreground_activity": "busy", "git": "x"})

    wrapped.hooks["cas_summary"] = concurrent_writer
    summary = await p.summaries.refresh(session.task_id)

    assert wrapped.calls["cas_summary"] == 2
    assert summary is not None and summary.revision == 3
    assert dict(summary.data) == {
        "foreground_activity": "busy",
        "git": "x",
        "pending_action": "clarification",
    }
    stored = await any_store.find_summary(session.task_id)
    assert stored is not None and dict(stored.data) == dict(summary.data)


async def test_a_retry_reapplies_fresh_repository_state_not_the_first_read(
    any_store: WholeStore, clock: ManualClock
) -> None:
    """The writer that saw the question loses its compare-and-set to one that saw the answer;
    its retry must read the repository again instead of writing its stale `clarification`."""
    world = World(any_store, clock)
    wrapped = FailingStore(any_store)
    p = await projections(wrapped)
    session = await world.session()
    rows = await world.ask(session.id)
    # The stored row says nothing is pending, so the first attempt wants a write.
    await _seed(any_store, session.task_id, {"git": "x"})

    async def answered_meanwhile() -> None:
        if wrapped.calls["cas_summary"] == 1:
            await world.answer(rows)
            await _seed(any_store, session.task_id, {"git": "x"})

    wrapped.hooks["cas_summary"] = answered_meanwhile
    await p.summaries.refresh(session.task_id)

    stored = await any_store.find_summary(session.task_id)
    assert stored is not None and dict(stored.data) == {"git": "x"}


async def test_a_refresh_that_finds_nothing_to_change_cannot_be_overtaken_by_a_stale_one(
    any_store: WholeStore, clock: ManualClock
) -> None:
    """Refresh A read "question pending" (no summary stored yet). Before its write, the
    question is answered and refresh B reads "clean": nothing to write, the stored row (none)
    already says so. A's compare-and-set then has nothing to lose against, so A would store
    its stale `clarification` for good. Refreshes of one task therefore run one at a time:
    B reads only after A wrote, and corrects it."""
    world = World(any_store, clock)
    wrapped = FailingStore(any_store)
    p = await projections(wrapped)
    session = await world.session()
    rows = await world.ask(session.id)
    second: list[asyncio.Task[Any]] = []

    async def answered_and_refreshed_meanwhile() -> None:
        if second:
            return
        await world.answer(rows)
        second.append(asyncio.create_task(p.summaries.refresh(session.task_id)))
        # B either finishes now (refreshes interleave) or waits for A (they do not).
        await asyncio.wait(second, timeout=1.0)

    wrapped.hooks["cas_summary"] = answered_and_refreshed_meanwhile
    await p.summaries.refresh(session.task_id)
    await asyncio.wait_for(second[0], 5)

    stored = await any_store.find_summary(session.task_id)
    assert stored is None or "pending_action" not in stored.data


async def test_compare_and_set_exhaustion_is_an_error(
    any_store: WholeStore, clock: ManualClock
) -> None:
    world = World(any_store, clock)
    wrapped = FailingStore(any_store)
    p = await projections(wrapped)
    session = await world.session()
    await world.ask(session.id)
    await _seed(any_store, session.task_id, {"n": 0})

    async def always_first() -> None:
        await _seed(any_store, session.task_id, {"n": wrapped.calls["cas_summary"]})

    wrapped.hooks["cas_summary"] = always_first
    with pytest.raises(SummaryConflict):
        await p.summaries.refresh(session.task_id)
    assert wrapped.calls["cas_summary"] == CAS_ATTEMPTS
    stored = await any_store.find_summary(session.task_id)
    assert stored is not None and dict(stored.data) == {"n": CAS_ATTEMPTS}


async def test_read_repair_clears_a_stale_pending_action_and_keeps_unrelated_fields(
    any_store: WholeStore, clock: ManualClock
) -> None:
    world = World(any_store, clock)
    p = await projections(any_store)
    session = await world.session()
    stale = await _seed(any_store, session.task_id, {**UNRELATED, "pending_action": "permission"})

    (view,) = await p.reads.tasks()
    repaired = view["status_summary"]
    assert repaired["revision"] == stale.revision + 1
    assert "pending_action" not in repaired
    assert {k: repaired[k] for k in UNRELATED} == UNRELATED
    stored = await any_store.find_summary(session.task_id)
    assert stored is not None and dict(stored.data) == UNRELATED
    (published,) = p.bus.of("task.status_summary.updated")
    assert published.payload["status_summary"]["revision"] == stale.revision + 1

    (again,) = await p.reads.tasks()
    assert again["status_summary"]["revision"] == stale.revision + 1, "no semantic change"
    assert len(p.bus.of("task.status_summary.updated")) == 1


async def test_read_repair_adds_a_missing_pending_action(store: WholeStore, world: World) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    stale = await _seed(store, session.task_id, dict(UNRELATED))
    view = await p.reads.task(session.task_id)
    assert view["status_summary"]["pending_action"] == "clarification"
    assert view["status_summary"]["revision"] == stale.revision + 1
    assert {k: view["status_summary"][k] for k in UNRELATED} == UNRELATED


async def test_repair_failure_invalidates_only_that_tasks_summary(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    stale_session = await world.session(state=SessionState.WAITING_FOR_INPUT)
    await world.ask(stale_session.id)
    await _seed(store, stale_session.task_id, {"git": "x"})
    fine_session = await world.session()
    fine = await _seed(store, fine_session.task_id, {"git": "y"})

    failpoints.configure("summary.cas=error")
    views = {v["id"]: v for v in await p.reads.tasks()}

    broken = views[stale_session.task_id]
    assert broken["status_summary_invalidated"] is True
    assert broken["status_summary"] is None
    # The coarse legacy fields still carry the authoritative action.
    assert broken["task_pending_action"] == "clarification"
    assert broken["primary_session_pending_action"] == "clarification"
    healthy = views[fine_session.task_id]
    assert "status_summary_invalidated" not in healthy
    assert healthy["status_summary"]["revision"] == fine.revision


async def test_a_repaired_summary_whose_publication_fails_is_still_returned(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    await world.ask(session.id)
    stale = await _seed(store, session.task_id, {"git": "x"})
    p.bus.fail_types.add("task.status_summary.updated")

    view = await p.reads.task(session.task_id)

    assert view["status_summary"]["pending_action"] == "clarification"
    assert view["status_summary"]["revision"] == stale.revision + 1
    assert "status_summary_invalidated" not in view
    assert not p.bus.of("task.status_summary.updated")


async def test_an_unreadable_repository_keeps_the_last_known_summary(
    store: WholeStore, world: World
) -> None:
    wrapped = FailingStore(store)
    p = await projections(wrapped)
    session = await world.session()
    await world.ask(session.id)
    known = await _seed(store, session.task_id, {"pending_action": "clarification"})
    wrapped.fail["pending_actions"] = OSError("database went away")

    view = await p.reads.task(session.task_id)

    assert view["status_summary"]["revision"] == known.revision
    assert view["status_summary"]["pending_action"] == "clarification"
    assert "status_summary_invalidated" not in view
