"""A replica's liveness is its advisory lock (cluster mode, so PostgreSQL only): a survivor
adopts the sessions of a replica that no longer holds its lock, exactly once, and never those
of one that does, whatever the rows in `clarion_replicas` say."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text

from clarion.runtime.clock import ManualClock
from clarion.store.db import membership as cluster
from clarion.store.db.liveness import LIVENESS_NAMESPACE, liveness_key, owner_not_running
from clarion.store.db.membership import membership
from tests.whole_store import WholeStore, open_whole_store

from .conftest import World, until_a_backend_waits_on_a_lock

pytestmark = pytest.mark.postgres
TIMEOUT_S = 10.0
CEILING_S = 60.0  # a ceiling for waits, never a delay


@pytest.fixture
def db_kind() -> str:
    return "postgres"


async def _row(store: WholeStore, replica_id: str, *, silent_s: float = 0.0) -> None:
    """A row for `replica_id` in clarion_replicas, last seen `silent_s` ago by the database's
    clock, as a replica that crashed leaves it (nobody holds its liveness lock)."""
    async with store.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO clarion_replicas (id, advertise_url, host, pid, role, sessions, "
                "heartbeats, started_at, last_seen_at) "
                "VALUES (:id, 'http://x', 'host', 1, 'active', 0, 0, now(), "
                "now() - make_interval(secs => :silent))"
            ),
            {"id": replica_id, "silent": silent_s},
        )


async def _rows(store: WholeStore) -> set[str]:
    async with store.engine.connect() as conn:
        return {str(i) for i in await conn.scalars(text("SELECT id FROM clarion_replicas"))}


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
        for replica_id in ids:
            assert await world.store.is_running(replica_id) is (replica_id in holding)
        await holder.rollback()


async def test_a_replica_whose_id_has_a_running_replicas_key_takes_another_id(
    world: World, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(["replica-twin", "replica-twin", "replica-other"])
    monkeypatch.setattr(cluster, "_unused_id", lambda: next(ids))
    async with (
        membership(store_url, TIMEOUT_S) as first,
        membership(store_url, TIMEOUT_S) as second,
    ):
        assert (first.replica_id, second.replica_id) == ("replica-twin", "replica-other")
        held = await _liveness_keys_held(world.store)
        assert {liveness_key("replica-twin"), liveness_key("replica-other")} <= held
        assert await world.store.is_running("replica-twin")
        assert await world.store.is_running("replica-other")


async def _liveness_keys_held(store: WholeStore) -> set[int]:
    async with store.engine.connect() as conn:
        keys = await conn.scalars(
            text(
                "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND objsubid = 2 AND classid = :ns"
            ),
            {"ns": LIVENESS_NAMESPACE},
        )
        return {int(k) for k in keys}


async def test_adopting_a_dead_replica_takes_its_sessions_and_deletes_its_row(
    world: World,
) -> None:
    first, second, unowned, others = [await world.session() for _ in range(4)]
    for session in (first, second):
        await world.own(session.id, "replica-dead")
    await world.own(others.id, "replica-c")
    await _row(world.store, "replica-dead", silent_s=60)
    await _row(world.store, "replica-c", silent_s=60)

    adopted = await world.store.adopt_replica("replica-a", "replica-dead")

    assert adopted == sorted([first.id, second.id])
    assert await world.owners() == {
        first.id: "replica-a",
        second.id: "replica-a",
        unowned.id: None,
        others.id: "replica-c",
    }
    assert await _rows(world.store) == {"replica-c"}
    assert await world.store.adopt_replica("replica-a", "replica-dead") is None


async def test_adopting_a_running_replica_changes_nothing(world: World, store_url: str) -> None:
    session = await world.session()
    async with membership(store_url, TIMEOUT_S) as peer:
        await peer.register("http://peer")
        await world.own(session.id, peer.replica_id)

        assert await world.store.adopt_replica("replica-a", peer.replica_id) is None

        assert await world.owners() == {session.id: peer.replica_id}
        assert await _rows(world.store) == {peer.replica_id}
    # Its connection ended, its lock with it (the row stays, marked stopped): now it is adopted.
    assert await world.store.adopt_replica("replica-a", peer.replica_id) == [session.id]


async def test_two_survivors_adopting_one_dead_replica_at_once_adopt_it_exactly_once(
    db_url: str, clock: ManualClock
) -> None:
    async with open_whole_store(db_url, clock) as a, open_whole_store(db_url, clock) as b:
        world = World(a, clock)
        sessions = [await world.session() for _ in range(30)]
        for session in sessions:
            await world.own(session.id, "replica-dead")
        await _row(a, "replica-dead", silent_s=60)
        await _count_owner_changes(a)

        # A creation in flight on the dead replica's row holds both adopters at its delete,
        # so that they race from the same point.
        async with a.engine.connect() as creator:
            await creator.execute(
                text("SELECT id FROM clarion_replicas WHERE id = 'replica-dead' FOR KEY SHARE")
            )
            both = asyncio.gather(
                a.adopt_replica("replica-a", "replica-dead"),
                b.adopt_replica("replica-b", "replica-dead"),
            )
            await until_a_backend_waits_on_a_lock(a, CEILING_S, count=2)
            await creator.commit()
        async with asyncio.timeout(CEILING_S):  # awaited here, so its outcome is always read
            by_a, by_b = await both

        assert (by_a is None) != (by_b is None), (by_a, by_b)
        winner = "replica-a" if by_a is not None else "replica-b"
        assert (by_a or by_b) == sorted(s.id for s in sessions)
        assert set((await world.owners()).values()) == {winner}
        async with a.engine.connect() as conn:
            changes = await conn.execute(
                text(
                    "SELECT session_id, count(*) AS changes FROM owner_changes GROUP BY session_id"
                )
            )
            assert {str(r.session_id): int(r.changes) for r in changes} == {
                s.id: 1 for s in sessions
            }


async def _count_owner_changes(store: WholeStore) -> None:
    """Log every change of a session's owner to `owner_changes` (a fresh database's)."""
    async with store.engine.begin() as conn:
        await conn.execute(text("CREATE TABLE owner_changes (session_id text NOT NULL)"))
        await conn.execute(
            text(
                "CREATE FUNCTION log_owner_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN INSERT INTO owner_changes VALUES (NEW.id); RETURN NEW; END $$"
            )
        )
        await conn.execute(
            text(
                "CREATE TRIGGER owner_change AFTER UPDATE OF owner_replica_id ON task_sessions "
                "FOR EACH ROW WHEN (OLD.owner_replica_id IS DISTINCT FROM NEW.owner_replica_id) "
                "EXECUTE FUNCTION log_owner_change()"
            )
        )


async def test_orphans_are_the_unowned_sessions_and_those_of_owners_without_row_or_lock(
    world: World, store_url: str
) -> None:
    unowned, rowless, dead, mine, running, unregistered = [await world.session() for _ in range(6)]
    await world.own(rowless.id, "replica-gone")
    await world.own(dead.id, "replica-dead")
    await _row(world.store, "replica-dead", silent_s=60)
    await world.own(mine.id, "replica-a")
    async with (
        membership(store_url, TIMEOUT_S) as peer,
        membership(store_url, TIMEOUT_S) as starting,
    ):
        await peer.register("http://peer")
        await world.own(running.id, peer.replica_id)
        await world.own(unregistered.id, starting.replica_id)  # running, no row yet

        assert await world.store.adopt_orphans("replica-a") == sorted([unowned.id, rowless.id])

        owners = await world.owners()
        # A dead replica that still has a row waits for adopt_replica (after its fencing
        # window); running replicas keep theirs, with a row or without one.
        assert owners[dead.id] == "replica-dead"
        assert owners[running.id] == peer.replica_id
        assert owners[unregistered.id] == starting.replica_id
        assert {owners[i] for i in (unowned.id, rowless.id, mine.id)} == {"replica-a"}
        assert await world.store.adopt_orphans("replica-a") == []
    # `starting` never registered, so it left no row: once stopped, its session is an orphan;
    # `peer`'s row stays (stopped), so its session waits for adopt_replica.
    assert await world.store.adopt_orphans("replica-a") == [unregistered.id]
    assert (await world.owners())[running.id] == peer.replica_id


async def test_dead_peers_are_the_other_rows_without_a_lock_with_their_silence(
    world: World, store_url: str
) -> None:
    await _row(world.store, "replica-dead", silent_s=90)
    await _row(world.store, "replica-self", silent_s=300)  # the caller's own row
    async with membership(store_url, TIMEOUT_S) as peer:
        await peer.register("http://peer")

        peers = await world.store.dead_peers("replica-self")

        assert [p.replica_id for p in peers] == ["replica-dead"]
        assert 90 <= peers[0].silent_s < 90 + 60
        assert await world.store.is_running(peer.replica_id)
    assert not await world.store.is_running(peer.replica_id)
    gone = {p.replica_id: p.silent_s for p in await world.store.dead_peers("replica-self")}
    assert gone.keys() == {"replica-dead", peer.replica_id}


async def test_is_running_is_whether_the_replica_holds_its_lock_now(
    world: World, store_url: str
) -> None:
    async with membership(store_url, TIMEOUT_S) as peer:
        assert await world.store.is_running(peer.replica_id)  # with or without a row
        await peer.register("http://peer")
        assert await world.store.is_running(peer.replica_id)
    assert not await world.store.is_running(peer.replica_id)
    assert not await world.store.is_running("never-ran")
