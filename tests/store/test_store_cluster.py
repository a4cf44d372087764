"""Cluster membership on PostgreSQL (PostgreSQL only: cluster mode refuses SQLite).

Each replica's locks live on its own connection: one leader at a time, a single-mode server and
a replica exclude each other, and a replica's row is what its peers see and wait out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clarion.store import migrate, open_engine
from clarion.store.cluster import membership
from clarion.store.guard import AnotherServer, single_server
from tests.conftest import fresh_database_url

pytestmark = pytest.mark.postgres


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


async def test_one_replica_leads_at_a_time_and_the_next_leads_once_it_has_left(
    pg_url: str,
) -> None:
    await _migrated(pg_url)
    async with membership(pg_url, 5.0) as first:
        await first.register("http://a")
        async with membership(pg_url, 5.0) as second:
            await second.register("http://b")
            assert await first.try_lead() is True
            assert await second.try_lead() is False
            await first.heartbeat(lambda: ("active", 2))
            listed = {r.advertise_url: (r.role, r.sessions) for r in await second.replicas()}
            assert listed == {"http://a": ("active", 2), "http://b": ("standby", 0)}
            age = await second.seconds_since_other_active()
            assert age is not None and 0 <= age < 5
            await first.leave()
            assert await second.seconds_since_other_active() is None
    async with membership(pg_url, 5.0) as third:
        assert await third.try_lead() is True  # the first's connection ended, its lock with it


async def test_single_mode_and_a_replica_exclude_each_other(pg_url: str) -> None:
    await _migrated(pg_url)
    async with single_server(pg_url):
        with pytest.raises(AnotherServer):
            async with membership(pg_url, 5.0):
                pass
    async with membership(pg_url, 5.0):
        with pytest.raises(AnotherServer, match="cluster replica"):
            async with single_server(pg_url):
                pass


async def test_a_new_leader_forgets_the_previous_active_row_and_its_heartbeat_then_fails(
    pg_url: str,
) -> None:
    await _migrated(pg_url)
    async with membership(pg_url, 5.0) as old, membership(pg_url, 5.0) as new:
        await old.register("http://old")
        await new.register("http://new")
        await old.heartbeat(lambda: ("active", 0))
        assert await new.forget_dead(older_than_s=5.0, previous_active=True) == 1
        with pytest.raises(LookupError):
            await old.heartbeat(lambda: ("active", 0))
        assert [r.advertise_url for r in await new.replicas()] == ["http://new"]
