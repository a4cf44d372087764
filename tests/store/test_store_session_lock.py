"""The session lock on PostgreSQL: one statement takes the session's advisory key and then its
row (every writer takes them in that order, or two writers could deadlock), for one session, for
many, and for the session of a bundle named by its pending id or of a turn named by its id. It
reads each session's owner in the same statement, which in cluster mode is the ownership fence
(store/db/owner_fence.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from sqlalchemy import text

from clarion.domain.models import Session
from clarion.store.db.owner_fence import OwnerFence
from clarion.store.db.transactions import Tx
from tests.store.conftest import World, statements_run, until_a_backend_waits_on_a_lock
from tests.whole_store import WholeStore

pytestmark = pytest.mark.postgres
CEILING_S = 60.0  # a ceiling for waits, never a delay


@pytest.fixture
def db_kind() -> str:
    return "postgres"


async def _row_is_free(store: WholeStore, session_id: str) -> bool:
    """Whether another transaction could lock the session row right now."""
    async with store.engine.connect() as conn, conn.begin():
        found = await conn.execute(
            text("SELECT id FROM task_sessions WHERE id = :id FOR UPDATE SKIP LOCKED"),
            {"id": session_id},
        )
        return found.first() is not None


@pytest.fixture
async def held_key(world: World) -> AsyncIterator[Callable[[Session], Awaitable[None]]]:
    """Holds a session's advisory key in a transaction of its own until the test ends it."""
    release = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def hold(session: Session) -> None:
        held = asyncio.Event()

        async def holder() -> None:
            db = world.store._db
            async with db.write() as conn:
                await db.lock_key(conn, "task-session-turn:" + session.id)
                held.set()
                await release.wait()

        tasks.append(asyncio.create_task(holder()))
        await asyncio.wait_for(held.wait(), CEILING_S)

    yield hold
    release.set()
    await asyncio.gather(*tasks)


async def _lock(world: World, lock: Callable[[Tx], Awaitable[None]]) -> None:
    db = world.store._db
    async with db.write() as conn:
        await lock(conn)


@pytest.mark.parametrize("how", ["one", "many", "bundle", "turn"])
async def test_the_lock_waits_for_the_key_before_it_takes_the_row(
    world: World, held_key: Callable[[Session], Awaitable[None]], how: str
) -> None:
    first, second = await world.session(), await world.session()
    turn = await world.turn(second)
    pending_id = (await world.bundle(second))[0].metadata["pending_id"]
    await held_key(second)
    db = world.store._db

    async def lock(conn: Tx) -> None:
        if how == "many":
            await db.lock_sessions(conn, [second.id, first.id])
        elif how == "bundle":  # the session found from the bundle's pending id
            await db.lock_bundle_session(conn, pending_id)
        elif how == "turn":  # the session found from the turn's id
            await db.lock_turn_session(conn, turn.id)
        else:
            await db.lock_session(conn, second.id)

    waiting = asyncio.ensure_future(_lock(world, lock))
    await until_a_backend_waits_on_a_lock(world.store)

    assert not waiting.done()
    # Waiting on the key, it holds no session row yet: not the waited-for one, nor (many) the
    # one whose key it already took.
    assert await _row_is_free(world.store, second.id)
    assert await _row_is_free(world.store, first.id)
    waiting.cancel()


async def test_a_lock_holds_the_key_and_the_row_until_its_transaction_ends(world: World) -> None:
    session = await world.session()
    db = world.store._db
    async with db.write() as conn:
        await db.lock_sessions(conn, [session.id])
        assert not await _row_is_free(world.store, session.id)
        other = asyncio.ensure_future(
            _lock(world, lambda c: db.lock_key(c, "task-session-turn:" + session.id))
        )
        await until_a_backend_waits_on_a_lock(world.store)
        assert not other.done()
    await asyncio.wait_for(other, CEILING_S)
    assert await _row_is_free(world.store, session.id)


@pytest.mark.parametrize("fenced", [False, True], ids=["single", "cluster"])
async def test_a_session_lock_is_one_statement_that_reads_the_owner(
    world: World, fenced: bool
) -> None:
    lost: list[str] = []
    if fenced:  # a registered replica, its sessions created after own_sessions
        async with world.store.engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO clarion_replicas (id, advertise_url, host, pid, role, "
                    "sessions, heartbeats, started_at, last_seen_at) "
                    "VALUES ('replica-a', 'http://a', 'host', 1, 'active', 0, 0, now(), now())"
                )
            )
        world.store.own_sessions(OwnerFence("replica-a", lost.append))
    session = await world.session()
    db = world.store._db
    turn = await world.turn(session)
    pending_id = (await world.bundle(session))[0].metadata["pending_id"]
    async with db.write() as conn:
        with statements_run(world.store) as statements:
            await db.lock_session(conn, session.id)
            await db.lock_sessions(conn, [session.id])
            assert await db.lock_bundle_session(conn, pending_id) == session.id
            assert await db.lock_turn_session(conn, turn.id) == session.id
    assert len(statements) == 4, statements
    assert all("owner_replica_id" in s and "FOR UPDATE" in s for s in statements), statements
    assert lost == []
    assert (await world.owners())[session.id] == ("replica-a" if fenced else None)


async def test_the_session_of_an_unknown_bundle_or_turn_is_none_and_nothing_is_locked(
    world: World,
) -> None:
    session = await world.session()
    db = world.store._db
    async with db.write() as conn:
        assert await db.lock_bundle_session(conn, "no-such-bundle") is None
        assert await db.lock_turn_session(conn, "no-such-turn") is None
        assert await _row_is_free(world.store, session.id)
        assert await _no_advisory_lock_held(world.store)


async def _no_advisory_lock_held(store: WholeStore) -> bool:
    async with store.engine.connect() as conn:
        held = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
                "database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        )
        return bool(held == 0)
