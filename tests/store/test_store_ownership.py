"""Store contract: sessions belong to the replica that runs their agent, and a replica that
takes over adopts, exactly once, the sessions no running replica owns; migration 7."""

from __future__ import annotations

import asyncio

from sqlalchemy import Connection, delete, inspect, text

from clarion.clock import ManualClock
from clarion.store import migrate, open_engine, open_store
from clarion.store.migrations import LATEST_VERSION, schema_version

from .conftest import World


async def test_a_takeover_adopts_every_session_no_running_replica_owns_and_only_once(
    world: World,
) -> None:
    single_mode = await world.session()  # created by a single-mode server: no owner
    dead, running, mine = [await world.session() for _ in range(3)]
    await world.own(dead.id, "replica-dead")
    await world.own(running.id, "replica-b")
    await world.own(mine.id, "replica-a")

    adopted = await world.store.adopt_sessions("replica-a", still_running=["replica-b"])

    assert adopted == sorted([single_mode.id, dead.id])
    assert await world.owners() == {
        single_mode.id: "replica-a",
        dead.id: "replica-a",
        running.id: "replica-b",
        mine.id: "replica-a",
    }
    assert await world.store.adopt_sessions("replica-a", still_running=["replica-b"]) == []


async def test_sessions_created_after_a_takeover_belong_to_the_replica(world: World) -> None:
    before = await world.session()
    world.store.own_new_sessions("replica-a")
    after = await world.session()
    assert (await world.owners())[before.id] is None
    assert (await world.owners())[after.id] == "replica-a"


async def test_two_replicas_adopting_at_once_each_take_a_session_exactly_once(
    world: World, store_url: str, clock: ManualClock
) -> None:
    sessions = [await world.session() for _ in range(60)]
    for session in sessions:
        await world.own(session.id, "replica-dead")
    async with open_store(store_url, clock) as a, open_store(store_url, clock) as b:
        by_a, by_b = await asyncio.gather(
            a.adopt_sessions("replica-a", still_running=["replica-b"]),
            b.adopt_sessions("replica-b", still_running=["replica-a"]),
        )
    assert not set(by_a) & set(by_b)
    assert sorted(by_a + by_b) == sorted(s.id for s in sessions)
    owners = await world.owners()
    assert all(owners[i] == "replica-a" for i in by_a)
    assert all(owners[i] == "replica-b" for i in by_b)


async def test_migration_seven_adds_the_owner_column_to_a_version_six_database(
    db_url: str,
) -> None:
    engine = open_engine(db_url)
    try:
        assert await migrate(engine) == LATEST_VERSION

        def back_to_version_six(conn: Connection) -> None:
            conn.execute(text("DROP INDEX ix_task_sessions_owner"))
            conn.execute(text("ALTER TABLE task_sessions DROP COLUMN owner_replica_id"))
            conn.execute(delete(schema_version).where(schema_version.c.version > 6))

        def owner_column_and_index(conn: Connection) -> tuple[bool, bool]:
            found = inspect(conn)
            columns = {str(c["name"]) for c in found.get_columns("task_sessions")}
            indexes = {str(i["name"]) for i in found.get_indexes("task_sessions")}
            return "owner_replica_id" in columns, "ix_task_sessions_owner" in indexes

        async with engine.begin() as conn:
            await conn.run_sync(back_to_version_six)
            assert await conn.run_sync(owner_column_and_index) == (False, False)
        assert await migrate(engine) == LATEST_VERSION == 7
        async with engine.connect() as conn:
            assert await conn.run_sync(owner_column_and_index) == (True, True)
    finally:
        await engine.dispose()
