"""Store contract: the set-based startup steps and migration 3."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

from sqlalchemy import Connection, insert, inspect

from clarion.domain import lifecycle
from clarion.domain.models import MetaKey, SessionState
from clarion.domain.turn_outcomes import TurnOutcome
from clarion.store import migrate, open_engine
from clarion.store.db.migrations import LATEST_VERSION, MIGRATIONS, schema_version
from clarion.store.pending_actions import PERMISSIONS_IN_TURNS
from clarion.store.summary_inputs import SUMMARY_INPUTS
from tests.whole_store import WholeStore

from .conftest import World


async def test_startup_detach_changes_exactly_the_listed_bundles_once(world: World) -> None:
    first = await world.session()
    second = await world.session()
    old = await world.turn(first)
    await world.bundle(first, pending_id="superseded", turn_id=old.id)
    await world.turn(first)
    await world.bundle(first, pending_id="a")
    await world.turn(second)
    await world.bundle(second, ("x", "y"), pending_id="b")
    ended = await world.session()
    await world.turn(ended)
    await world.bundle(ended, pending_id="ended")
    await world.store.transition_session(ended.id, SessionState.COMPLETED)

    listed = await world.store.list_detachable_bundles()
    changed = await world.store.transition_all_bundles(lifecycle.DETACH)

    assert [(b.session_id, b.pending_id) for b in changed] == listed
    assert {(b.pending_id, b.task_id, b.rows) for b in changed} == {
        ("a", first.task_id, 1),
        ("b", second.task_id, 2),
    }
    for pending_id in ("a", "b"):
        bundle = await world.store.find_bundle(pending_id)
        assert bundle is not None
        assert all(r.metadata[MetaKey.AGENT_DISCONNECTED] is True for r in bundle.rows)
        assert all(r.updated_at == world.clock.now() for r in bundle.rows)
    for untouched in ("superseded", "ended"):
        bundle = await world.store.find_bundle(untouched)
        assert bundle is not None
        assert all(MetaKey.AGENT_DISCONNECTED not in r.metadata for r in bundle.rows)
    assert await world.store.list_detachable_bundles() == []
    assert await world.store.transition_all_bundles(lifecycle.DETACH) == ()


async def test_complete_open_turns_interrupts_open_authoritative_turns_only(
    world: World,
) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, pending_id="p")
    reservation = await world.store.reserve_successor(
        session.id,
        source_turn_id=source.id,
        pending_id="p",
        message_ids=[(await world.store.find_bundle("p")).rows[0].id],  # type: ignore[union-attr]
    )
    listed = {t.id for t in await world.store.list_open_turns()}

    done = await world.store.complete_open_turns(outcome=TurnOutcome.INTERRUPTED)

    assert {t.id for t in done} == listed == {source.id}
    assert reservation.id not in listed
    stored = await world.store.get_turn(source.id)
    assert stored.completed_at is not None and stored.metadata.get("interrupted") is True
    assert await world.store.complete_open_turns(outcome=TurnOutcome.INTERRUPTED) == []


async def test_transition_sessions_moves_only_sessions_in_an_allowed_state(world: World) -> None:
    running = await world.session()
    await world.store.transition_session(running.id, SessionState.RUNNING)
    ended = await world.session()
    await world.store.transition_session(ended.id, SessionState.COMPLETED)

    moved = await world.store.transition_sessions([running.id, ended.id], SessionState.IDLE)

    assert moved == [running.id]
    assert (await world.store.get_session(running.id)).state is SessionState.IDLE
    assert (await world.store.get_session(ended.id)).state is SessionState.COMPLETED


async def test_migration_three_adds_the_open_turn_index_to_a_version_two_database(
    db_url: str,
) -> None:
    engine = open_engine(db_url)
    try:

        def version_two(conn: Connection) -> None:
            schema_version.create(conn)
            for version in (1, 2):
                MIGRATIONS[version - 1](conn)
                conn.execute(
                    insert(schema_version).values(version=version, applied_at=datetime.now(UTC))
                )

        def turn_indexes(conn: Connection) -> set[str]:
            return {str(i["name"]) for i in inspect(conn).get_indexes("task_session_turns")}

        async with engine.begin() as conn:
            await conn.run_sync(version_two)
            assert "ix_turns_session_open" not in await conn.run_sync(turn_indexes)
        assert await migrate(engine) == LATEST_VERSION
        async with engine.connect() as conn:
            assert "ix_turns_session_open" in await conn.run_sync(turn_indexes)
        assert await migrate(engine) == LATEST_VERSION
    finally:
        await engine.dispose()


async def test_clearing_start_markers_clears_only_turns_that_carry_one(world: World) -> None:
    session = await world.session()
    marked = await world.turn(session)
    plain = await world.turn(session)
    key = MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING
    await world.raw_turn_metadata(marked.id, {key: True, "kept": 1})

    assert await world.store.clear_start_markers([marked.id, plain.id, "missing"]) == [marked.id]

    assert (await world.store.get_turn(marked.id)).metadata == {"kept": 1}
    assert await world.store.list_start_marked_turns() == []
    assert await world.store.clear_start_markers([marked.id]) == []


async def test_the_permission_lookup_uses_the_turn_index_not_the_session_history(
    store: WholeStore,
) -> None:
    """Without migration 4, SQLite answered "newest permission request in this turn" by
    walking the session's whole history backwards (250 ms at 100,000 messages); the batched
    lookup of every session's current-turn permission requests must seek the turn index."""

    async with store.engine.connect() as conn:
        found = await conn.run_sync(_message_indexes)
        assert found["ix_messages_turn_type_order"] == ["turn_id", "type", "created_at", "id"]
        if store.dialect != "sqlite":
            return  # PostgreSQL plans from statistics; the index is what it can use
        sql = PERMISSIONS_IN_TURNS.params(turn_ids=["t1", "t2"]).compile(
            dialect=conn.dialect, compile_kwargs={"literal_binds": True}
        )
        plan = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")
        details = " | ".join(str(row[-1]) for row in plan)
    assert "ix_messages_turn_type_order" in details, details
    assert "TEMP B-TREE" not in details, details


async def test_a_turns_pending_question_is_found_without_reading_its_answered_ones(
    world: World,
) -> None:
    """The task summary asks "does the current turn hold a pending question" on every change;
    without migration 10 both databases answered it by reading every row of the turn, so a
    turn of a few hundred answered questions cost a scan per summary. The plan must go through
    ix_messages_turn_pending, on PostgreSQL in the generic plan a prepared statement ends up
    with (which knows no parameter's value: the pending statuses are in the SQL's text)."""
    session = await world.session()
    await world.turn(session)
    for _ in range(40):
        [row] = await world.bundle(session, ("q",))
        await world.answer(str(row.metadata["pending_id"]), "x")
    store = world.store
    async with store.engine.connect() as conn:
        if store.dialect == "sqlite":
            listed = await conn.exec_driver_sql("PRAGMA index_list(task_session_messages)")
            names = {str(index.name) for index in listed}
        else:
            listed = await conn.exec_driver_sql(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'task_session_messages'"
            )
            names = {str(index.indexname) for index in listed}
        assert "ix_messages_turn_pending" in names
        compiled = SUMMARY_INPUTS.compile(dialect=conn.dialect)
        if store.dialect == "sqlite":
            sql = SUMMARY_INPUTS.params(task_id=session.task_id).compile(
                dialect=conn.dialect, compile_kwargs={"literal_binds": True}
            )
            plan = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")
        else:
            # Usable is what is asserted: on a table this small a scan would cost less.
            await conn.exec_driver_sql("SET enable_seqscan = off")
            await conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
            await conn.exec_driver_sql(f"PREPARE summary_inputs AS {compiled}")
            values = compiled.construct_params({"task_id": session.task_id})
            args = ", ".join(f"'{values[name]}'" for name in compiled.positiontup or ())
            plan = await conn.exec_driver_sql(f"EXPLAIN EXECUTE summary_inputs({args})")
        details = " | ".join(str(row[-1]) for row in plan)
    assert "ix_messages_turn_pending" in details, details
    summary = await store.summary_inputs(session.task_id)
    assert summary.actions == {session.id: None}  # every question of the turn is answered


def _message_indexes(conn: Connection) -> dict[str, list[str]]:
    """The message table's indexes and their columns, as SQLAlchemy reflects them: it skips
    SQLite's ix_messages_turn_pending, on an expression, with a warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based")
        return {
            str(i["name"]): [str(c) for c in i["column_names"] if c is not None]
            for i in inspect(conn).get_indexes("task_session_messages")
        }
