"""Which bundles a live waiter holds: LiveWaiterLookup answers its own and unowned bundles from
memory and asks each other owner once, concurrently; a read asks once per read, and only about
bundles whose state depends on it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

import pytest

from clarion.domain.models import Message
from clarion.projection.waiter_lookup import LiveWaiterLookup, local_only
from tests.projection.builders import World, projections
from tests.whole_store import WholeStore

ME = "replica-me"


class Peers:
    """The injected side of a lookup: ownership, this replica's waiters, the peers' answers."""

    def __init__(
        self,
        owners: dict[str, str | None],
        local: Iterable[str] = (),
        held: dict[str, set[str]] | None = None,
        failing: Iterable[str] = (),
    ) -> None:
        self.owner_of = owners
        self.local_held = set(local)
        self.held = held or {}
        self.failing = set(failing)
        self.asked: list[tuple[str, list[str]]] = []
        self.owner_lookups: list[list[str]] = []

    def local(self, pending_id: str) -> bool:
        return pending_id in self.local_held

    async def owners(self, pending_ids: Sequence[str]) -> dict[str, str | None]:
        self.owner_lookups.append(list(pending_ids))
        return {p: self.owner_of.get(p) for p in pending_ids}

    async def ask(self, replica_id: str, pending_ids: Sequence[str]) -> set[str]:
        self.asked.append((replica_id, list(pending_ids)))
        if replica_id in self.failing:
            raise ConnectionError(f"{replica_id} is gone")
        return self.held.get(replica_id, set())

    def lookup(self) -> LiveWaiterLookup:
        return LiveWaiterLookup(replica_id=ME, local=self.local, owners=self.owners, ask=self.ask)


async def test_ids_this_replica_owns_are_answered_from_its_own_waiters() -> None:
    peers = Peers(owners={"p1": ME, "p2": ME}, local={"p1"})
    assert await peers.lookup()(["p1", "p2"]) == {"p1"}
    assert peers.asked == []


async def test_ids_nobody_owns_are_answered_locally_without_asking_anyone() -> None:
    peers = Peers(owners={"p1": None, "p2": None}, local={"p2"})
    assert await peers.lookup()(["p1", "p2", "unknown"]) == {"p2"}
    assert peers.asked == []


async def test_remote_ids_are_grouped_by_owner_with_one_ask_per_owner() -> None:
    peers = Peers(
        owners={"a1": "A", "b1": "B", "a2": "A", "m1": ME},
        local={"m1"},
        held={"A": {"a2"}, "B": {"b1"}},
    )
    assert await peers.lookup()(["a1", "b1", "a2", "m1"]) == {"a2", "b1", "m1"}
    assert sorted(peers.asked) == [("A", ["a1", "a2"]), ("B", ["b1"])]
    assert peers.owner_lookups == [["a1", "b1", "a2", "m1"]]


async def test_owners_are_asked_concurrently() -> None:
    both_asked = asyncio.Event()
    asking: set[str] = set()

    async def ask(replica_id: str, pending_ids: Sequence[str]) -> set[str]:
        asking.add(replica_id)
        if len(asking) == 2:
            both_asked.set()
        # Each answer waits until the other owner was asked too: asked one after the other,
        # the first would wait forever.
        await asyncio.wait_for(both_asked.wait(), 5)
        return set(pending_ids)

    peers = Peers(owners={"a1": "A", "b1": "B"})
    lookup = LiveWaiterLookup(replica_id=ME, local=peers.local, owners=peers.owners, ask=ask)
    assert await lookup(["a1", "b1"]) == {"a1", "b1"}


async def test_an_owner_that_cannot_be_asked_counts_as_holding_none_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    peers = Peers(owners={"a1": "A", "b1": "B"}, held={"B": {"b1"}}, failing={"A"})
    with caplog.at_level(logging.WARNING, logger="clarion.projection.waiter_lookup"):
        assert await peers.lookup()(["a1", "b1"]) == {"b1"}
    [record] = [r for r in caplog.records if r.name == "clarion.projection.waiter_lookup"]
    assert record.owner == "A"  # type: ignore[attr-defined]
    assert record.pending_ids == ["a1"]  # type: ignore[attr-defined]


async def test_an_owner_vouches_only_for_the_ids_it_was_asked_about() -> None:
    peers = Peers(owners={"a1": "A", "b1": "B"}, held={"A": {"a1", "b1"}})
    assert await peers.lookup()(["a1", "b1"]) == {"a1"}


async def test_no_ids_ask_nothing_at_all() -> None:
    peers = Peers(owners={})
    assert await peers.lookup()([]) == set()
    assert peers.owner_lookups == [] and peers.asked == []


async def test_a_repeated_id_is_asked_about_once() -> None:
    peers = Peers(owners={"a1": "A"}, held={"A": {"a1"}})
    assert await peers.lookup()(["a1", "a1"]) == {"a1"}
    assert peers.asked == [("A", ["a1"])]


async def test_single_mode_answers_every_id_from_this_process() -> None:
    live = local_only(lambda pending_id: pending_id.startswith("live"))
    assert await live(["live-1", "gone", "live-2"]) == {"live-1", "live-2"}


# ----------------------------------------------------------------------------- in the reads


class Recorder:
    """A live-waiter callable that records each batch it is asked about."""

    def __init__(self, held: Iterable[str] = ()) -> None:
        self.held = set(held)
        self.calls: list[list[str]] = []

    async def __call__(self, pending_ids: Sequence[str]) -> set[str]:
        self.calls.append(list(pending_ids))
        return self.held.intersection(pending_ids)


def _pending_id(rows: Sequence[Message]) -> str:
    return str(rows[0].metadata["pending_id"])


async def test_the_inbox_asks_once_for_every_bundle_it_lists(
    store: WholeStore, world: World
) -> None:
    task = await world.task()
    first = await world.session(task.id)
    second = await world.session(task.id, primary=False)
    a = _pending_id(await world.ask(first.id))
    b = _pending_id(await world.ask(second.id, ("x", "y")))
    await world.permission(second.id)
    recorder = Recorder(held={b})
    p = await projections(store, live_waiters=recorder)

    inbox = await p.reads.inbox(None)

    assert recorder.calls == [[a, b]]
    states = {item["id"]: item["state"] for item in inbox["items"]}
    assert states[a] == "active_detached"
    assert states[b] == "active_live"
    assert sorted(item["kind"] for item in inbox["items"]) == [
        "clarification",
        "clarification",
        "permission",
    ]


async def test_an_inbox_without_questions_asks_nobody(store: WholeStore, world: World) -> None:
    session = await world.session()
    await world.permission(session.id)
    recorder = Recorder()
    p = await projections(store, live_waiters=recorder)
    assert (await p.reads.inbox(None))["total"] == 1
    assert recorder.calls == []


async def test_a_bundle_reads_active_live_only_when_a_live_waiter_holds_it(
    store: WholeStore, world: World
) -> None:
    session = await world.session()
    pending_id = _pending_id(await world.ask(session.id))
    recorder = Recorder(held={pending_id})
    p = await projections(store, live_waiters=recorder)
    assert (await p.reads.bundle(pending_id))["state"] == "active_live"
    recorder.held.clear()
    assert (await p.reads.bundle(pending_id))["state"] == "active_detached"
    assert recorder.calls == [[pending_id], [pending_id]]


async def test_an_answered_bundle_is_read_without_asking_about_waiters(
    store: WholeStore, world: World
) -> None:
    session = await world.session()
    rows = await world.ask(session.id)
    await world.answer(rows)
    recorder = Recorder(held={_pending_id(rows)})
    p = await projections(store, live_waiters=recorder)
    assert (await p.reads.bundle(_pending_id(rows)))["state"] == "terminal"
    assert recorder.calls == []


async def test_an_unreachable_owner_leaves_its_questions_in_the_inbox_as_detached(
    store: WholeStore, world: World
) -> None:
    session = await world.session()
    pending_id = _pending_id(await world.ask(session.id))
    peers = Peers(owners={pending_id: "gone"}, failing={"gone"})
    p = await projections(store, live_waiters=peers.lookup())
    [item] = (await p.reads.inbox(None))["items"]
    assert (item["id"], item["state"]) == (pending_id, "active_detached")
