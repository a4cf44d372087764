"""Cluster mode: a session read, a task's session list, a bundle read and a permission read
name the session's owner (`replica_id`) and its advertise URL (`replica_url`), read once per
read for every owner in it; null for an owner whose URL is not known (not live); neither
field for a single server's session."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

from clarion.domain.models import Bundle, Session
from clarion.runtime.clock import ManualClock
from tests.projection.builders import World, projections
from tests.whole_store import WholeStore


class OwnedBy:
    """The store, with every session read owned by `owners[session id]` (as a cluster
    replica's store reads them)."""

    def __init__(self, store: WholeStore, owners: dict[str, str]) -> None:
        self._store = store
        self._owners = owners

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _own(self, session: Session) -> Session:
        return dataclasses.replace(session, owner_replica_id=self._owners.get(session.id))

    async def get_session(self, session_id: str) -> Session:
        return self._own(await self._store.get_session(session_id))

    async def list_sessions(self, task_id: str) -> list[Session]:
        return [self._own(s) for s in await self._store.list_sessions(task_id)]

    async def find_bundle(self, pending_id: str) -> Bundle | None:
        bundle = await self._store.find_bundle(pending_id)
        return (
            None
            if bundle is None
            else dataclasses.replace(bundle, session=self._own(bundle.session))
        )


class Urls:
    def __init__(self, known: dict[str, str]) -> None:
        self.known = known
        self.asked: list[set[str]] = []

    async def __call__(self, replica_ids: Collection[str]) -> Mapping[str, str]:
        self.asked.append(set(replica_ids))
        return {rid: self.known[rid] for rid in replica_ids if rid in self.known}


async def test_reads_name_the_owner_and_its_advertise_url(
    any_store: WholeStore, clock: ManualClock
) -> None:
    world = World(any_store, clock)
    task = await world.task()
    first = await world.session(task.id)
    second = await world.session(task.id, primary=False)
    rows = await world.ask(first.id)
    permission = await world.permission(first.id)
    store = OwnedBy(any_store, {first.id: "r-a", second.id: "r-gone"})
    reads = (await projections(store)).reads
    urls = Urls({"r-a": "http://a:8787"})
    reads.use_replica_urls(urls)

    one = await reads.session(first.id)
    assert (one["replica_id"], one["replica_url"]) == ("r-a", "http://a:8787")
    listed = {s["id"]: (s["replica_id"], s["replica_url"]) for s in await reads.sessions(task.id)}
    assert listed == {first.id: ("r-a", "http://a:8787"), second.id: ("r-gone", None)}
    assert urls.asked == [{"r-a"}, {"r-a", "r-gone"}]  # once per read, every owner at once
    bundle = await reads.bundle(str(rows[0].metadata["pending_id"]))
    assert (bundle["replica_id"], bundle["replica_url"]) == ("r-a", "http://a:8787")
    view = await reads.with_owner({"session_id": first.id, "message_id": permission.id})
    assert (view["replica_id"], view["replica_url"]) == ("r-a", "http://a:8787")


async def test_a_single_servers_reads_name_no_replica(
    any_store: WholeStore, clock: ManualClock
) -> None:
    world = World(any_store, clock)
    session = await world.session()
    rows = await world.ask(session.id)
    reads = (await projections(any_store)).reads
    urls = Urls({})
    reads.use_replica_urls(urls)
    read = await reads.session(session.id)
    bundle = await reads.bundle(str(rows[0].metadata["pending_id"]))
    view = await reads.with_owner({"session_id": session.id})
    for body in (read, bundle, view):
        assert "replica_id" not in body and "replica_url" not in body
    assert urls.asked == []
