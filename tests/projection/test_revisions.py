"""pending_action_revision: a database-allocated epoch per start, a sequence reserved before
each read, and the client rule (larger revision wins) converging on repository state; in
shared mode (cluster replicas on one PostgreSQL database) both come from the database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clarion.domain.models import Revision
from clarion.projection.pending import PendingProjector
from clarion.runtime.clock import ManualClock
from tests.conftest import fresh_database_url
from tests.lifecycle.harness import running_lifecycle
from tests.projection.builders import ClientModel, GatedStore, World, projections
from tests.whole_store import WholeStore, open_whole_store


def _key(wire: dict[str, object]) -> tuple[int, int]:
    return int(str(wire["epoch"])), int(str(wire["sequence"]))


async def test_epoch_comes_from_the_database_and_grows_across_two_builds(db_url: str) -> None:
    async with running_lifecycle(db_url) as first:
        task_id, session_id = await first.start_session()
        first_epoch = first.app.services.projector.epoch
        before = (await first.app.services.reads.sessions(task_id))[0]
    async with running_lifecycle(db_url) as second:
        second_epoch = second.app.services.projector.epoch
        after = (await second.app.services.reads.sessions(task_id))[0]
    assert first_epoch >= 1
    assert second_epoch > first_epoch
    assert before["pending_action_revision"]["epoch"] == str(first_epoch)
    assert after["pending_action_revision"]["epoch"] == str(second_epoch)
    # The sequence restarted with the new epoch, yet the new revision is larger.
    assert (
        after["pending_action_revision"]["sequence"]
        <= before["pending_action_revision"]["sequence"]
    )
    assert _key(after["pending_action_revision"]) > _key(before["pending_action_revision"])

    client = ClientModel()
    client.apply(session_id, after)
    assert not client.apply(session_id, before), "a pre-restart result must be rejected"
    rebuilt = ClientModel(highest_epoch=second_epoch)
    assert not rebuilt.apply(session_id, before), "an unseen older epoch must be rejected"


async def test_epochs_allocated_by_separate_openings_only_grow(
    db_url: str, clock: ManualClock
) -> None:
    epochs = []
    for _ in range(3):
        async with open_whole_store(db_url, clock) as store:
            p = await projections(store)
            epochs.append(p.projector.epoch)
    assert epochs == sorted(set(epochs)) and len(epochs) == 3


async def test_sequence_grows_with_every_read_inside_one_epoch(
    store: WholeStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    revisions = [(await p.projector.project_one(session.id)).revision for _ in range(3)]
    assert [r.epoch for r in revisions] == [p.projector.epoch] * 3
    assert revisions[0].sequence < revisions[1].sequence < revisions[2].sequence


async def test_a_read_that_started_later_carries_a_larger_revision_even_if_it_finishes_first(
    store: WholeStore, world: World
) -> None:
    gated = GatedStore(store)
    p = await projections(gated)
    session = await world.session()
    gated.hold_before()
    earlier = asyncio.create_task(p.projector.project_one(session.id))
    await asyncio.wait_for(gated.holding.wait(), 5)  # reserved, not yet read

    later = await p.projector.project_one(session.id)  # starts later, finishes first
    assert not earlier.done()
    gated.release()
    first = await asyncio.wait_for(earlier, 5)

    assert _rev(later.revision) > _rev(first.revision)


async def test_an_older_read_held_in_flight_loses_to_a_newer_one(
    store: WholeStore, world: World
) -> None:
    """The stale read saw the bundle; a newer read after the answer is clean. Whatever order the
    results arrive in, a client keeping the larger revision ends on the repository state."""
    gated = GatedStore(store)
    p = await projections(gated)
    session = await world.session()
    rows = await world.ask(session.id)
    gated.hold_after()
    stale = asyncio.create_task(p.projector.project_one(session.id))
    await asyncio.wait_for(gated.holding.wait(), 5)  # read done (pending), result held
    await world.answer(rows)
    fresh = await p.projector.project_one(session.id)
    gated.release()
    old = await stale
    assert old.pending_action is not None and fresh.pending_action is None

    for order in ((fresh, old), (old, fresh)):
        client = ClientModel()
        for projection in order:
            client.apply(session.id, _fields(projection.pending_action, projection.revision))
        assert client.pending[session.id] is None


@pytest.fixture
async def replicas(
    tmp_path: Path, clock: ManualClock
) -> AsyncIterator[tuple[WholeStore, WholeStore]]:
    """Two stores on one PostgreSQL database, as two cluster replicas' processes hold it."""
    with fresh_database_url("postgres", tmp_path) as url:
        async with open_whole_store(url, clock) as first, open_whole_store(url, clock) as second:
            yield first, second


async def _shared(store: WholeStore) -> PendingProjector:
    """A replica's projector at its start: a new epoch, revisions from the database."""
    projector = PendingProjector(store, shared=True)
    await projector.allocate_epoch()
    return projector


@pytest.mark.postgres
async def test_a_shared_projector_takes_its_revisions_from_the_store(
    replicas: tuple[WholeStore, WholeStore], clock: ManualClock
) -> None:
    store, _ = replicas
    projector = await _shared(store)
    session = await World(store, clock).session()
    projected = (await projector.project_one(session.id)).revision
    # The next value of the database's sequence is the one right after the projection's.
    assert await store.reserve_revision() == Revision(projected.epoch, projected.sequence + 1)
    assert await projector.current_epoch() == projected.epoch == projector.epoch


@pytest.mark.postgres
async def test_shared_reads_on_two_replicas_grow_in_the_order_they_ran(
    replicas: tuple[WholeStore, WholeStore], clock: ManualClock
) -> None:
    first, second = replicas
    a, b = await _shared(first), await _shared(second)
    session = await World(first, clock).session()
    order = [a, b, b, a, b, a]
    revisions = [_rev((await p.project_one(session.id)).revision) for p in order]
    assert revisions == sorted(set(revisions)), revisions


@pytest.mark.postgres
async def test_a_replica_publishes_under_the_epoch_of_a_replica_that_started_after_it(
    replicas: tuple[WholeStore, WholeStore], clock: ManualClock
) -> None:
    first, second = replicas
    early = await _shared(first)
    session = await World(first, clock).session()
    before = (await early.project_one(session.id)).revision
    late = await _shared(second)
    after = (await early.project_one(session.id)).revision
    assert late.epoch > early.epoch == before.epoch
    assert after.epoch == late.epoch == await early.current_epoch()
    client = ClientModel()
    client.apply(session.id, _fields(None, after))
    assert not client.apply(session.id, _fields(None, before)), "an older epoch is rejected"


@pytest.mark.postgres
async def test_a_later_read_on_another_replica_wins_even_if_it_finishes_first(
    replicas: tuple[WholeStore, WholeStore], clock: ManualClock
) -> None:
    first, second = replicas
    gated = GatedStore(first)
    held = PendingProjector(gated, shared=True)
    await held.allocate_epoch()
    other = await _shared(second)
    session = await World(first, clock).session()
    gated.hold_before()
    earlier = asyncio.create_task(held.project_one(session.id))
    await asyncio.wait_for(gated.holding.wait(), 5)  # reserved on one replica, not yet read

    later = await other.project_one(session.id)  # the other replica: starts later, ends first
    assert not earlier.done()
    gated.release()
    first_read = await asyncio.wait_for(earlier, 5)

    assert _rev(later.revision) > _rev(first_read.revision)


async def test_the_in_process_projector_never_asks_the_store_for_a_revision(
    store: WholeStore, world: World
) -> None:
    """Without `shared` (one process, SQLite included) revisions come from the process's own
    epoch and counter, as before: SQLite, which cannot reserve shared revisions, still works."""
    p = await projections(store)
    session = await world.session()
    revision = (await p.projector.project_one(session.id)).revision
    assert revision == Revision(p.projector.epoch, 1)
    assert await p.projector.current_epoch() == p.projector.epoch


def _rev(revision: Revision) -> tuple[int, int]:
    return revision.epoch, revision.sequence


def _fields(action: object, revision: Revision) -> dict[str, object]:
    return {
        "pending_action": None if action is None else str(action),
        "pending_action_revision": revision.as_wire(),
    }
