"""pending_action_revision: a database-allocated epoch per start, a sequence reserved before
each read, and the client rule (larger revision wins) converging on repository state."""

from __future__ import annotations

import asyncio

from clarion.clock import ManualClock
from clarion.domain.models import Revision
from clarion.store import SqlStore, open_store
from tests.lifecycle.harness import running_lifecycle
from tests.projection.builders import ClientModel, GatedStore, World, projections


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
        async with open_store(db_url, clock) as store:
            p = await projections(store)
            epochs.append(p.projector.epoch)
    assert epochs == sorted(set(epochs)) and len(epochs) == 3


async def test_sequence_grows_with_every_read_inside_one_epoch(
    store: SqlStore, world: World
) -> None:
    p = await projections(store)
    session = await world.session()
    revisions = [(await p.projector.project_one(session.id)).revision for _ in range(3)]
    assert [r.epoch for r in revisions] == [p.projector.epoch] * 3
    assert revisions[0].sequence < revisions[1].sequence < revisions[2].sequence


async def test_a_read_that_started_later_carries_a_larger_revision_even_if_it_finishes_first(
    store: SqlStore, world: World
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
    store: SqlStore, world: World
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


def _rev(revision: Revision) -> tuple[int, int]:
    return revision.epoch, revision.sequence


def _fields(action: object, revision: Revision) -> dict[str, object]:
    return {
        "pending_action": None if action is None else str(action),
        "pending_action_revision": revision.as_wire(),
    }
