"""Store contract: sessions belong to the replica that runs their agent; migration 7. (Adopting
the sessions of replicas that are gone reads their liveness locks, so its tests are
PostgreSQL's: test_store_liveness.py.)"""

from __future__ import annotations

from sqlalchemy import Connection, delete, inspect, text

from clarion.store import migrate, open_engine
from clarion.store.migrations import LATEST_VERSION, schema_version

from .conftest import World


async def test_sessions_created_after_a_takeover_belong_to_the_replica(world: World) -> None:
    before = await world.session()
    world.store.own_new_sessions("replica-a")
    after = await world.session()
    assert (await world.owners())[before.id] is None
    assert (await world.owners())[after.id] == "replica-a"


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
