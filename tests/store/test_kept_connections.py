"""PostgreSQL: a store's transactions run on connections it keeps between them, each at the
isolation level of its kind; a failed transaction's connection goes back to the pool, a dropped
one takes the idle ones with it, and closing the store gives every kept one back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import Connection, event, text
from sqlalchemy.exc import DBAPIError

from clarion.store import summaries
from clarion.store.db.engine import KEPT_CONNECTIONS, POOL_SIZE, Db
from tests.whole_store import WholeStore

from .conftest import World, fast_path_statements, transaction_control_sent

pytestmark = pytest.mark.postgres

_ISOLATION = text("SELECT current_setting('transaction_isolation')")


@pytest.fixture
def db_kind() -> str:
    return "postgres"


def _in_transaction(conn: Connection) -> bool:
    """Whether the driver's connection is inside a transaction it began (PostgreSQL says so
    after each statement)."""
    return bool(conn.connection.driver_connection.is_in_transaction())  # type: ignore[union-attr]


def _db(store: WholeStore) -> Db:
    return store._db


async def _keeping_one(store: WholeStore, sql: str = "SELECT 1") -> Db:
    """The store's transactions, after one write (`sql`) left one connection kept."""
    db = store._db
    async with db.write() as conn:
        await conn.execute(text(sql))
    assert db._kept.idle == 1
    return db


async def test_every_kind_runs_at_its_isolation_on_one_kept_connection_with_no_checkout(
    store: WholeStore,
) -> None:
    db = await _keeping_one(store)  # the one connection: checked out once, then kept
    checkouts: list[object] = []
    event.listen(store.engine.sync_engine.pool, "checkout", lambda *a: checkouts.append(a[1]))
    seen: dict[str, tuple[str, bool]] = {}
    for name, block in (
        ("write", db.write),
        ("read", db.read),
        ("read_one", db.read_one),
        ("write_one", db.write_one),
        ("write again", db.write),
    ):
        async with block() as conn:
            level = str((await conn.execute(_ISOLATION)).scalar())
            seen[name] = (level, await conn.run_sync(_in_transaction))
    assert seen == {
        "write": ("read committed", True),
        "read": ("repeatable read", True),
        "read_one": ("read committed", False),
        "write_one": ("read committed", False),
        "write again": ("read committed", True),
    }
    assert checkouts == []
    assert db._kept.idle == 1


async def test_a_failed_transaction_rolls_back_and_its_connection_is_not_kept(
    store: WholeStore,
) -> None:
    db = await _keeping_one(store, "CREATE TABLE kept_probe (n int)")

    async def failing() -> None:
        async with db.write() as conn:
            await conn.execute(text("INSERT INTO kept_probe VALUES (1)"))
            raise RuntimeError("the block failed")

    with pytest.raises(RuntimeError, match="the block failed"):
        await failing()
    assert db._kept.idle == 0
    async with db.read_one() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM kept_probe"))).scalar() == 0


async def test_a_burst_keeps_at_most_its_share_of_the_pool(store: WholeStore) -> None:
    db = _db(store)
    all_in = asyncio.Barrier(POOL_SIZE + 1)
    release = asyncio.Event()

    async def one() -> None:
        async with db.write() as conn:
            await conn.execute(text("SELECT 1"))
            await all_in.wait()
            await release.wait()

    burst = [asyncio.create_task(one()) for _ in range(POOL_SIZE)]
    async with asyncio.timeout(60):  # a ceiling, never a delay
        await all_in.wait()  # the whole pool in use at once
    release.set()
    await asyncio.gather(*burst)
    assert db._kept.idle == KEPT_CONNECTIONS < POOL_SIZE
    pool = store.engine.sync_engine.pool
    assert pool.checkedout() == KEPT_CONNECTIONS  # type: ignore[attr-defined]


async def test_a_dropped_connection_fails_one_transaction_and_releases_the_idle_ones(
    store: WholeStore,
) -> None:
    db = _db(store)
    all_in = asyncio.Barrier(3 + 1)
    release = asyncio.Event()
    pids: list[int] = []

    async def hold() -> None:
        async with db.write() as conn:
            pids.append(int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar()))
            await all_in.wait()
            await release.wait()

    holders = [asyncio.create_task(hold()) for _ in range(3)]
    async with asyncio.timeout(60):  # a ceiling, never a delay
        await all_in.wait()  # three connections in use at once, then kept
    release.set()
    await asyncio.gather(*holders)
    assert db._kept.idle == 3
    async with store.engine.connect() as admin:  # the pool's spare: not a kept one
        await admin.execute(
            text("SELECT pg_terminate_backend(pid) FROM unnest(CAST(:pids AS int[])) AS pid"),
            {"pids": pids},
        )
        await admin.commit()
    with pytest.raises(DBAPIError):
        async with db.write() as conn:
            await conn.execute(text("SELECT 1"))
    assert db._kept.idle == 0
    async with db.write() as conn:  # a fresh connection from the pool
        assert (await conn.execute(text("SELECT 1"))).scalar() == 1


async def test_closing_the_store_gives_every_kept_connection_back_to_the_pool(
    store: WholeStore,
) -> None:
    db = await _keeping_one(store)
    pool = store.engine.sync_engine.pool
    assert pool.checkedout() == 1  # type: ignore[attr-defined]
    db.close()
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    async with db.write() as conn:  # still usable, but nothing is kept any more
        await conn.execute(text("SELECT 1"))
    assert db._kept.idle == 0
    assert pool.checkedout() == 0  # type: ignore[attr-defined]


async def _summary_cas(db: Db, task_id: str, expected: int, data: dict[str, int]) -> int:
    """The summary's compare-and-set, a hot statement, on the fast path inside `db.write()`
    (which is a transaction), returning the rows it changed."""
    async with db.write() as conn:
        result = await conn.execute(
            summaries._CAS_UPDATE,
            {
                "b_task_id": task_id,
                "b_expected": expected,
                "b_revision": expected + 1,
                "b_summary": data,
                "b_updated_at": datetime.now(UTC),
            },
        )
        if data.get("fail"):
            raise RuntimeError("the block failed")
        return result.rowcount


async def test_a_fast_path_transaction_commits_and_rolls_back_on_the_driver_alone(
    world: World,
) -> None:
    """A block whose statements all ran on the fast path never had a SQLAlchemy transaction:
    its end commits, or rolls back, the driver's."""
    session = await world.session()
    store = world.store
    db = _db(store)
    first = await store.cas_summary(session.task_id, expected_revision=None, data={"a": 1})
    assert first is not None
    ran: list[str] = []
    with fast_path_statements(ran.append), transaction_control_sent(store) as control:
        assert await _summary_cas(db, session.task_id, first.revision, {"a": 2}) == 1
        with pytest.raises(RuntimeError, match="the block failed"):
            await _summary_cas(db, session.task_id, first.revision + 1, {"a": 3, "fail": 1})
    assert len(ran) == 2  # both updates on the fast path, none through SQLAlchemy
    assert control == ["BEGIN", "COMMIT", "BEGIN", "ROLLBACK"]
    stored = await store.find_summary(session.task_id)
    assert stored is not None and (stored.revision, stored.data) == (2, {"a": 2})
    assert db._kept.idle == 1  # the committed one kept, the failed one given back
