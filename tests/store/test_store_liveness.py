"""A replica's liveness is its advisory lock (cluster mode, so PostgreSQL only): a takeover
adopts the sessions of every owner that no longer holds its lock, and never those of an owner
that does, whatever the rows in `clarion_replicas` say."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text

from clarion.clock import ManualClock
from clarion.store import cluster, open_store
from clarion.store.cluster import membership
from clarion.store.liveness import LIVENESS_NAMESPACE, liveness_key, owner_not_running

from .conftest import World

pytestmark = pytest.mark.postgres
TIMEOUT_S = 10.0


@pytest.fixture
def db_kind() -> str:
    return "postgres"


async def test_the_sql_reads_the_lock_python_takes_for_every_replica_id(world: World) -> None:
    ids = [str(uuid.uuid4()) for _ in range(40)]
    holding, free = ids[:20], ids[20:]
    async with world.store.engine.connect() as holder, world.store.engine.connect() as reader:
        for replica_id in holding:
            await holder.execute(
                text("SELECT pg_advisory_lock(:ns, :key)"),
                {"ns": LIVENESS_NAMESPACE, "key": liveness_key(replica_id)},
            )
        values = ", ".join(f"('{replica_id}')" for replica_id in ids)
        stopped = await reader.scalars(
            text(
                f"SELECT owner FROM (VALUES {values}) AS t(owner) "
                f"WHERE {owner_not_running('t.owner').text}"
            )
        )
        assert sorted(stopped) == sorted(free)
        await holder.rollback()


async def test_a_takeover_adopts_the_sessions_of_owners_that_hold_no_liveness_lock(
    world: World, store_url: str
) -> None:
    single_mode, dead, mine, running = [await world.session() for _ in range(4)]
    await world.own(dead.id, "replica-dead")
    await world.own(mine.id, "replica-a")
    async with membership(store_url, TIMEOUT_S) as peer:
        await world.own(running.id, peer.replica_id)

        adopted = await world.store.adopt_sessions("replica-a")

        assert adopted == sorted([single_mode.id, dead.id])
        assert await world.owners() == {
            single_mode.id: "replica-a",
            dead.id: "replica-a",
            mine.id: "replica-a",
            running.id: peer.replica_id,
        }
        assert await world.store.adopt_sessions("replica-a") == []
    # The peer has stopped: its lock went with its connection, and its session is adopted.
    assert await world.store.adopt_sessions("replica-a") == [running.id]


async def test_two_running_replicas_adopting_at_once_each_take_a_session_exactly_once(
    world: World, store_url: str, clock: ManualClock
) -> None:
    sessions = [await world.session() for _ in range(60)]
    for session in sessions:
        await world.own(session.id, "replica-dead")
    async with (
        membership(store_url, TIMEOUT_S) as member_a,
        membership(store_url, TIMEOUT_S) as member_b,
        open_store(store_url, clock) as a,
        open_store(store_url, clock) as b,
    ):
        by_a, by_b = await asyncio.gather(
            a.adopt_sessions(member_a.replica_id),
            b.adopt_sessions(member_b.replica_id),
        )
        assert not set(by_a) & set(by_b)
        assert sorted(by_a + by_b) == sorted(s.id for s in sessions)
        owners = await world.owners()
        assert all(owners[i] == member_a.replica_id for i in by_a)
        assert all(owners[i] == member_b.replica_id for i in by_b)


async def test_a_replica_whose_id_has_a_running_replicas_key_takes_another_id(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(["replica-twin", "replica-twin", "replica-other"])
    monkeypatch.setattr(cluster, "_unused_id", lambda: next(ids))
    async with (
        membership(store_url, TIMEOUT_S) as first,
        membership(store_url, TIMEOUT_S) as second,
    ):
        assert (first.replica_id, second.replica_id) == ("replica-twin", "replica-other")
        held = await _liveness_keys_held(store_url)
        assert {liveness_key("replica-twin"), liveness_key("replica-other")} <= held


async def _liveness_keys_held(url: str) -> set[int]:
    async with open_store(url, ManualClock()) as store, store.engine.connect() as conn:
        keys = await conn.scalars(
            text(
                "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND objsubid = 2 AND classid = :ns"
            ),
            {"ns": LIVENESS_NAMESPACE},
        )
        return {int(k) for k in keys}
