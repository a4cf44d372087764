"""Store contract: opening and migrating, timestamps, tasks, sessions and messages."""

from __future__ import annotations

import asyncio
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.engine import Connection

from clarion.domain.errors import NotFound
from clarion.domain.models import SessionState, WorkflowStep
from clarion.runtime.clock import ManualClock
from clarion.store import migrate, open_engine
from clarion.store.db.engine import async_url
from clarion.store.db.migrations import LATEST_VERSION, schema_version
from tests.whole_store import WholeStore, open_whole_store

from .conftest import World


def test_user_urls_map_to_the_async_drivers() -> None:
    assert async_url("sqlite:///tmp/x.db") == "sqlite+aiosqlite:///tmp/x.db"
    assert async_url("postgresql://u:p@h:5/db") == "postgresql+asyncpg://u:p@h:5/db"
    assert async_url("postgres://u@h/db") == "postgresql+asyncpg://u@h/db"
    with pytest.raises(ValueError, match="unsupported"):
        async_url("mysql://h/db")


async def test_sqlite_file_gets_parent_directories_wal_and_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "clarion.db"
    engine = open_engine(f"sqlite:///{path}")
    try:
        async with engine.connect() as conn:
            mode = (await conn.execute(text("PRAGMA journal_mode"))).scalar()
            fks = (await conn.execute(text("PRAGMA foreign_keys"))).scalar()
            busy = (await conn.execute(text("PRAGMA busy_timeout"))).scalar()
        assert (mode, fks) == ("wal", 1)
        assert busy
        assert busy > 0
        assert path.exists()
    finally:
        await engine.dispose()


async def test_migrating_twice_and_concurrently_applies_each_version_once(db_url: str) -> None:
    engines = [open_engine(db_url), open_engine(db_url)]
    try:
        versions = await asyncio.gather(*(migrate(e) for e in engines))
        assert versions == [LATEST_VERSION, LATEST_VERSION]
        assert await migrate(engines[0]) == LATEST_VERSION
        async with engines[0].connect() as conn:
            rows = (await conn.execute(select(schema_version.c.version))).scalars().all()
        assert sorted(rows) == list(range(1, LATEST_VERSION + 1))
    finally:
        for engine in engines:
            await engine.dispose()


async def test_store_survives_reopening_the_same_database(db_url: str, clock: ManualClock) -> None:
    async with open_whole_store(db_url, clock) as store:
        workspace = await store.ensure_workspace("default")
    async with open_whole_store(db_url, clock) as store:
        assert (await store.ensure_workspace("default")).id == workspace.id


async def test_timestamps_come_back_aware_utc_with_microseconds(world: World) -> None:
    world.clock.advance(0.000007)
    session = await world.session()
    stored = await world.store.get_session(session.id)
    assert stored.created_at.tzinfo is UTC
    assert stored.created_at == world.clock.now()
    assert stored.created_at.microsecond == world.clock.now().microsecond


async def test_ensure_workspace_is_idempotent_by_name(store: WholeStore) -> None:
    first = await store.ensure_workspace("team")
    assert (await store.ensure_workspace("team")).id == first.id
    assert (await store.ensure_workspace("other")).id != first.id
    assert await store.get_workspace(first.id) == first
    with pytest.raises(NotFound):
        await store.get_workspace("missing")


async def test_tasks_start_in_backlog_and_move_between_steps(world: World) -> None:
    workspace = await world.store.ensure_workspace("default")
    other = await world.store.ensure_workspace("other")
    task = await world.store.create_task(title="T", description="D", workspace_id=workspace.id)
    hidden = await world.store.create_task(title="H", description="", workspace_id=other.id)
    assert task.workflow_step == WorkflowStep.BACKLOG
    world.clock.advance(1)
    moved = await world.store.set_task_step(task.id, WorkflowStep.REVIEW)
    assert moved.workflow_step == WorkflowStep.REVIEW
    assert moved.updated_at > task.updated_at
    assert (await world.store.get_task(task.id)) == moved
    assert [t.id for t in await world.store.list_tasks()] == [task.id, hidden.id]
    assert [t.id for t in await world.store.list_tasks([workspace.id])] == [task.id]
    with pytest.raises(NotFound):
        await world.store.get_task("missing")
    with pytest.raises(NotFound):
        await world.store.set_task_step("missing", WorkflowStep.DONE)


async def test_session_transitions_are_guarded_and_terminal_states_stick(world: World) -> None:
    session = await world.session()
    assert session.state == SessionState.CREATED
    assert not await world.store.transition_session(
        session.id, SessionState.IDLE, allowed_from=[SessionState.RUNNING]
    )
    assert await world.store.transition_session(session.id, SessionState.RUNNING)
    assert await world.store.transition_session(session.id, SessionState.COMPLETED)
    assert not await world.store.transition_session(session.id, SessionState.RUNNING)
    assert (await world.store.get_session(session.id)).state == SessionState.COMPLETED
    listed = await world.store.list_sessions_in_states([SessionState.COMPLETED])
    assert [s.id for s in listed] == [session.id]
    assert [s.id for s in await world.store.list_sessions(session.task_id)] == [session.id]
    with pytest.raises(NotFound):
        await world.store.get_session("missing")


async def test_add_message_goes_to_the_current_turn_and_appends_stream_text(
    world: World,
) -> None:
    session = await world.session()
    turn = await world.turn(session)
    message = await world.say(session, "Hel")
    assert message.turn_id == turn.id
    assert message.task_id == session.task_id
    world.clock.advance(1)
    grown = await world.store.append_message_content(message.id, "lo")
    assert grown.content == "Hello"
    assert grown.updated_at > message.updated_at
    with pytest.raises(NotFound):
        await world.store.append_message_content("missing", "x")


async def test_list_messages_pages_oldest_first_with_a_cursor(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    made = []
    for i in range(5):
        world.clock.advance(0 if i == 2 else 1)  # a timestamp tie, broken by id
        made.append(await world.say(session, f"m{i}"))
    page = await world.store.list_messages(session.id, limit=2)
    assert [m.content for m in page.messages] == ["m0", "m1"]
    assert page.total == 5
    page = await world.store.list_messages(session.id, after=page.next_after, limit=2)
    assert [m.content for m in page.messages] == ["m2", "m3"]
    page = await world.store.list_messages(session.id, after=page.next_after, limit=2)
    assert [m.content for m in page.messages] == ["m4"]
    assert page.next_after is None
    with pytest.raises(NotFound):
        await world.store.list_messages(session.id, after="missing")


async def test_delete_message_only_deletes_within_its_session(world: World) -> None:
    session = await world.session()
    other = await world.session()
    await world.turn(session)
    message = await world.say(session)
    assert await world.store.delete_message(other.id, message.id) is None
    assert (await world.store.get_message(message.id)).id == message.id


async def test_bundle_lookup_uses_the_indexed_pending_id_column(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a", "b"), pending_id="p-index")
    from clarion.store.db.schema import task_session_messages as m

    async with world.store.engine.connect() as conn:
        count = (
            await conn.execute(select(func.count()).where(m.c.pending_id == "p-index"))
        ).scalar()
    assert count == 2
    assert "ix_messages_pending" in {i.name for i in m.indexes}


async def test_naive_datetimes_are_refused(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    world.clock._now = world.clock.now().replace(tzinfo=None) + timedelta(0)
    with pytest.raises(Exception, match="naive"):
        await world.say(session)


async def test_active_state_and_ownership_survive_a_restart(
    world: World, store_url: str, clock: ManualClock
) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, pending_id="old")
    current = await world.turn(session)
    await world.bundle(session, pending_id="live")
    await world.turn(session, lifecycle_only=True)  # the agent-boot record of a restart
    async with open_whole_store(store_url, clock) as reopened:
        found = await reopened.find_current_turn(session.id)
        assert found is not None
        assert found.id == current.id
        assert await reopened.list_active_bundle_ids(session.id) == ["live"]
        assert await reopened.list_detachable_bundles() == [(session.id, "live")]


async def test_a_one_statement_read_runs_outside_a_transaction_on_postgres(
    store: WholeStore,
) -> None:
    """`read_one` spends no BEGIN/COMMIT on PostgreSQL: its statement runs with no transaction
    open on the driver's connection, while `read()` opens one first. SQLite reads as before."""
    db = store._db

    def in_transaction(conn: Connection) -> bool:
        return bool(conn.connection.driver_connection.is_in_transaction())  # type: ignore[union-attr]

    async with db.read_one() as conn:
        assert (await conn.execute(text("SELECT 1"))).scalar() == 1
        if db.is_postgres:
            assert not await conn.run_sync(in_transaction)
    if db.is_postgres:
        async with db.read() as conn:
            await conn.execute(text("SELECT 1"))
            assert await conn.run_sync(in_transaction)


async def test_a_one_change_write_runs_outside_a_transaction_on_postgres_and_locked_on_sqlite(
    store: WholeStore,
) -> None:
    """`write_one` spends no BEGIN/COMMIT on PostgreSQL; each statement commits alone there
    (so it is for blocks with one change and no lock). On SQLite it is `write()`: the block
    holds the write lock, and its changes commit together."""
    db = store._db

    def in_transaction(conn: Connection) -> bool:
        if db.is_postgres:
            return bool(conn.connection.driver_connection.is_in_transaction())  # type: ignore[union-attr]
        return bool(conn.connection.dbapi_connection.in_transaction)  # type: ignore[union-attr]

    async with db.write_one() as conn:
        await conn.execute(text("SELECT 1"))
        assert await conn.run_sync(in_transaction) is not db.is_postgres
    async with db.write() as conn:
        await conn.execute(text("SELECT 1"))
        assert await conn.run_sync(in_transaction)
