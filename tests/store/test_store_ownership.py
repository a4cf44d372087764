"""Store contract: sessions belong to the replica that runs their agent; where a new session
goes; which replica a request must reach; migration 7. Only the migration concerns SQLite too:
ownership is cluster mode's, and cluster mode needs PostgreSQL. (Adopting the sessions of
replicas that are gone reads their liveness locks: test_store_liveness.py.)"""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, delete, inspect, text

from clarion.domain.models import SessionState
from clarion.ports.cluster import SessionRoute
from clarion.store import migrate, open_engine
from clarion.store.db.migrations import LATEST_VERSION, schema_version
from clarion.store.db.owner_fence import OwnerFence
from tests.whole_store import WholeStore

from .conftest import World

postgres_only = pytest.mark.parametrize(
    "db_kind", [pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]
)
TIMEOUT_S = 10.0


async def _row(
    store: WholeStore,
    replica_id: str,
    *,
    role: str = "active",
    started_s_ago: float = 100.0,
    silent_s: float = 0.0,
) -> None:
    """A row in clarion_replicas, its times relative to the database's clock."""
    async with store.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO clarion_replicas (id, advertise_url, host, pid, role, sessions, "
                "heartbeats, started_at, last_seen_at) "
                "VALUES (:id, 'http://x', 'host', 1, :role, 0, 0, "
                "now() - make_interval(secs => :started), now() - make_interval(secs => :silent))"
            ),
            {"id": replica_id, "role": role, "started": started_s_ago, "silent": silent_s},
        )


async def _sessions_of(world: World, replica_id: str, *states: SessionState) -> None:
    """One session owned by `replica_id` in each of `states`."""
    for state in states:
        session = await world.session()
        await world.own(session.id, replica_id)
        if state is not SessionState.CREATED:
            assert await world.store.transition_session(session.id, state) is not None


@postgres_only
async def test_sessions_created_after_own_sessions_belong_to_the_replica(world: World) -> None:
    before = await world.session()
    await _row(world.store, "replica-a")
    world.store.own_sessions(OwnerFence("replica-a", lambda reason: None))
    after = await world.session()
    owners = await world.owners()
    assert owners[before.id] is None
    assert owners[after.id] == "replica-a"


@postgres_only
async def test_a_session_read_names_its_owner_in_cluster_mode_only(world: World) -> None:
    single = await world.session()
    await _row(world.store, "replica-a")
    world.store.own_sessions(OwnerFence("replica-a", lambda reason: None))
    created = await world.session()
    assert created.owner_replica_id == "replica-a"
    assert (await world.store.get_session(created.id)).owner_replica_id == "replica-a"
    assert (await world.store.get_session(single.id)).owner_replica_id is None
    await world.own(single.id, "replica-b")
    listed = {s.id: s.owner_replica_id for s in await world.store.list_sessions(single.task_id)}
    assert listed[single.id] == "replica-b"


@postgres_only
async def test_placement_lists_live_serving_replicas_fewest_running_sessions_first(
    world: World,
) -> None:
    created, running, done, failed = (
        SessionState.CREATED,
        SessionState.RUNNING,
        SessionState.COMPLETED,
        SessionState.FAILED,
    )
    # Terminal sessions are not counted: replica-finished runs one, not four.
    await _row(world.store, "replica-finished", started_s_ago=50)
    await _sessions_of(world, "replica-finished", running, done, failed, done)
    await _row(world.store, "replica-busy", started_s_ago=90)
    await _sessions_of(world, "replica-busy", created, running)
    await _row(world.store, "replica-empty", started_s_ago=10)
    # Equal counts: the replica that started first comes first.
    await _row(world.store, "replica-old", started_s_ago=80)
    await _sessions_of(world, "replica-old", running)
    # Not serving, or not seen within the timeout: never a placement.
    await _row(world.store, "replica-starting", role="starting")
    await _row(world.store, "replica-stopped", role="stopped")
    await _row(world.store, "replica-silent", silent_s=TIMEOUT_S + 20)

    assert await world.store.placement(TIMEOUT_S) == [
        ("replica-empty", 0),
        ("replica-old", 1),
        ("replica-finished", 1),
        ("replica-busy", 2),
    ]


@postgres_only
async def test_a_route_is_the_session_and_its_owner_and_none_for_an_unknown_id(
    world: World,
) -> None:
    owned, unowned = await world.session(), await world.session()
    await world.own(owned.id, "replica-a")
    await world.turn(owned)
    await world.turn(unowned)
    bundle_id = (await world.bundle(owned))[0].metadata["pending_id"]
    message = await world.say(unowned)
    store = world.store

    assert await store.route_of_session(owned.id) == SessionRoute(owned.id, "replica-a")
    assert await store.route_of_session(unowned.id) == SessionRoute(unowned.id, None)
    assert await store.route_of_bundle(bundle_id) == SessionRoute(owned.id, "replica-a")
    assert await store.route_of_message(message.id) == SessionRoute(unowned.id, None)
    assert await store.route_of_session("no-such-session") is None
    assert await store.route_of_bundle("no-such-bundle") is None
    assert await store.route_of_message("no-such-message") is None


@postgres_only
async def test_bundle_owners_maps_each_known_pending_id_to_its_sessions_owner(
    world: World,
) -> None:
    owned, unowned = await world.session(), await world.session()
    await world.own(owned.id, "replica-a")
    await world.turn(owned)
    await world.turn(unowned)
    mine = (await world.bundle(owned, ("db", "cache")))[0].metadata["pending_id"]
    nobodys = (await world.bundle(unowned))[0].metadata["pending_id"]

    owners = await world.store.bundle_owners([mine, nobodys, "no-such-bundle"])

    assert owners == {mine: "replica-a", nobodys: None}
    assert await world.store.bundle_owners([]) == {}


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
        assert await migrate(engine) == LATEST_VERSION
        async with engine.connect() as conn:
            assert await conn.run_sync(owner_column_and_index) == (True, True)
    finally:
        await engine.dispose()
