"""Store contract: pending-projection revisions shared by every replica of one PostgreSQL
database (cluster mode), and migration 8, which creates their sequence."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import delete, text

from clarion.domain.models import Revision
from clarion.runtime.clock import ManualClock
from clarion.store import migrate, open_engine
from clarion.store.db.migrations import LATEST_VERSION, schema_version
from clarion.store.revisions import SharedRevisionsNeedPostgres
from tests.conftest import fresh_database_url
from tests.whole_store import WholeStore, open_whole_store

from .conftest import statements_run

_SEQUENCE = text(
    "SELECT cache_size FROM pg_sequences WHERE sequencename = 'clarion_pending_revision'"
)


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    with fresh_database_url("postgres", tmp_path) as url:
        yield url


@pytest.fixture
async def replicas(pg_url: str, clock: ManualClock) -> AsyncIterator[tuple[WholeStore, WholeStore]]:
    """Two stores on one PostgreSQL database, as two replicas' processes hold it."""
    async with open_whole_store(pg_url, clock) as first, open_whole_store(pg_url, clock) as second:
        yield first, second


def _key(revision: Revision) -> tuple[int, int]:
    return revision.epoch, revision.sequence


async def test_migration_eight_creates_the_revision_sequence_on_postgres_and_nothing_on_sqlite(
    db_url: str,
) -> None:
    engine = open_engine(db_url)
    try:
        assert await migrate(engine) == LATEST_VERSION >= 8
        if engine.dialect.name != "postgresql":
            return
        async with engine.connect() as conn:
            # One cached value per session: cached ranges would break real-time order.
            assert (await conn.execute(_SEQUENCE)).scalar() == 1
        # Applied again over an existing sequence (a version-7 database that has it), it
        # changes nothing.
        async with engine.begin() as conn:
            await conn.execute(delete(schema_version).where(schema_version.c.version > 7))
        assert await migrate(engine) == LATEST_VERSION
        async with engine.connect() as conn:
            assert (await conn.execute(_SEQUENCE)).scalar() == 1
    finally:
        await engine.dispose()


@pytest.mark.postgres
async def test_interleaved_reservations_of_two_replicas_only_grow(
    replicas: tuple[WholeStore, WholeStore],
) -> None:
    first, second = replicas
    await first.next_epoch()
    order = [first, second, second, first, second, first, first, second]
    revisions = [_key(await store.reserve_revision()) for store in order]
    assert revisions == sorted(set(revisions)), revisions


@pytest.mark.postgres
async def test_a_reservation_after_concurrent_ones_finished_is_larger_than_all_of_them(
    replicas: tuple[WholeStore, WholeStore],
) -> None:
    first, second = replicas
    await second.next_epoch()
    burst = await asyncio.gather(
        *(store.reserve_revision() for store in (first, second) for _ in range(10))
    )
    assert len({r.sequence for r in burst}) == 20
    later = await first.reserve_revision()
    assert all(_key(later) > _key(r) for r in burst)


@pytest.mark.postgres
async def test_after_one_replica_allocates_an_epoch_the_other_reserves_under_it(
    replicas: tuple[WholeStore, WholeStore],
) -> None:
    first, second = replicas
    assert await first.next_epoch() == 1
    before = await second.reserve_revision()
    assert before.epoch == 1
    assert await first.next_epoch() == 2
    after = await second.reserve_revision()
    assert after.epoch == 2
    assert _key(after) > _key(before)


@pytest.mark.postgres
async def test_a_reservation_is_one_statement(replicas: tuple[WholeStore, WholeStore]) -> None:
    first, _ = replicas
    await first.next_epoch()
    with statements_run(first) as seen:
        await first.reserve_revision()
    assert len(seen) == 1 and "nextval('clarion_pending_revision')" in seen[0], seen


@pytest.mark.postgres
async def test_reserving_before_any_epoch_was_allocated_raises(
    replicas: tuple[WholeStore, WholeStore],
) -> None:
    first, _ = replicas
    with pytest.raises(LookupError, match="next_epoch"):
        await first.reserve_revision()


async def test_reserving_a_shared_revision_on_sqlite_raises_a_clear_error(
    tmp_path: Path, clock: ManualClock
) -> None:
    async with open_whole_store(f"sqlite:///{tmp_path / 'single.db'}", clock) as store:
        await store.next_epoch()
        with pytest.raises(SharedRevisionsNeedPostgres, match="PostgreSQL"):
            await store.reserve_revision()
