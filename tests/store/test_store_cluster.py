"""Cluster membership on PostgreSQL (PostgreSQL only: cluster mode refuses SQLite).

Each replica's locks live on its own connection: a single-mode server and a replica exclude
each other; a replica's row is what its peers see, stays when it stops (for the survivor that
adopts its sessions), and once deleted by that survivor stops the replica's heartbeats."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from clarion.runtime.clock import ManualClock
from clarion.store import migrate, open_engine
from clarion.store.db.membership import membership
from clarion.store.db.single_server import AnotherServer, single_server
from tests.conftest import fresh_database_url
from tests.whole_store import WholeStore, open_whole_store

pytestmark = pytest.mark.postgres
TIMEOUT_S = 5.0
DAY_S = 24 * 3600.0


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    with fresh_database_url("postgres", tmp_path) as url:
        yield url


async def _migrated(url: str) -> None:
    engine = open_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


@pytest.fixture
async def observer(pg_url: str) -> AsyncIterator[WholeStore]:
    """Another replica's store on the same database (it migrates the database)."""
    async with open_whole_store(pg_url, ManualClock()) as opened:
        yield opened


async def _row(store: WholeStore, replica_id: str) -> tuple[str, float] | None:
    """A replica's role and how long ago it was last seen (the database's clock)."""
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT role, EXTRACT(EPOCH FROM (now() - last_seen_at)) AS silent_s "
                    "FROM clarion_replicas WHERE id = :id"
                ),
                {"id": replica_id},
            )
        ).first()
    return None if row is None else (str(row.role), float(row.silent_s))


async def test_single_mode_and_a_replica_exclude_each_other(pg_url: str) -> None:
    await _migrated(pg_url)
    async with single_server(pg_url):
        with pytest.raises(AnotherServer):
            async with membership(pg_url, TIMEOUT_S):
                pass
    async with membership(pg_url, TIMEOUT_S):
        with pytest.raises(AnotherServer, match="cluster replica"):
            async with single_server(pg_url):
                pass


async def test_a_replica_registers_as_starting_and_heartbeats_its_role_and_sessions(
    pg_url: str,
) -> None:
    await _migrated(pg_url)
    async with membership(pg_url, TIMEOUT_S) as first, membership(pg_url, TIMEOUT_S) as second:
        await first.register("http://a")
        await second.register("http://b")
        listed = {r.advertise_url: (r.role, r.sessions) for r in await second.replicas()}
        assert listed == {"http://a": ("starting", 0), "http://b": ("starting", 0)}

        await first.heartbeat(lambda: ("active", 2))

        listed = {r.advertise_url: (r.role, r.sessions) for r in await second.replicas()}
        assert listed == {"http://a": ("active", 2), "http://b": ("starting", 0)}


async def test_leaving_keeps_the_row_as_stopped_long_ago_and_the_lock_goes_with_the_connection(
    pg_url: str, observer: WholeStore
) -> None:
    async with membership(pg_url, TIMEOUT_S) as staying:
        await staying.register("http://staying")
        async with membership(pg_url, TIMEOUT_S) as leaving:
            await leaving.register("http://leaving")
            await leaving.heartbeat(lambda: ("active", 1))

            await leaving.leave()

            row = await _row(observer, leaving.replica_id)
            assert row is not None and row[0] == "stopped" and row[1] >= DAY_S
            # Its connection is still open: it still holds its lock, so nobody adopts it yet.
            assert await observer.is_running(leaving.replica_id)
            assert await observer.dead_peers(staying.replica_id) == []
            assert [r.advertise_url for r in await staying.replicas()] == ["http://staying"]
        assert not await observer.is_running(leaving.replica_id)
        peers = await observer.dead_peers(staying.replica_id)
        assert [p.replica_id for p in peers] == [leaving.replica_id]
        assert peers[0].silent_s >= DAY_S  # no fencing window to wait out
        row = await _row(observer, leaving.replica_id)
        assert row is not None and row[0] == "stopped"  # the row outlives the connection


async def test_a_heartbeat_after_the_row_was_deleted_raises_lookup_error(
    pg_url: str, observer: WholeStore
) -> None:
    """A survivor deleted the row: it took this replica for gone and adopted its sessions."""
    async with membership(pg_url, TIMEOUT_S) as replica:
        await replica.register("http://a")
        await replica.heartbeat(lambda: ("active", 0))
        async with observer.engine.begin() as conn:
            await conn.execute(
                text("DELETE FROM clarion_replicas WHERE id = :id"), {"id": replica.replica_id}
            )

        with pytest.raises(LookupError, match="no longer registered"):
            await replica.heartbeat(lambda: ("active", 0))
        assert await _row(observer, replica.replica_id) is None
