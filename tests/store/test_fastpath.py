"""The fast path returns exactly what SQLAlchemy returns, for every hot statement, on SQLite and
PostgreSQL: each statement runs once through `Tx.execute` (the raw driver: sqlite3, asyncpg)
and once through SQLAlchemy's `Connection.execute`, each in a write transaction rolled back
afterwards, on the same rows; values are compared by `repr`, so a naive datetime, an int for a
bool or a string for a JSON object would show. Both run inside the transaction: its rollback
undoes the fast path's insert. Also: misses match, an empty IN list falls back to SQLAlchemy,
a constraint error is SQLAlchemy's exception, and on PostgreSQL both ways share one prepared
statement and a dropped connection fails and recovers as it does through SQLAlchemy."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import TextClause, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, StatementError
from sqlalchemy.sql.base import Executable

from clarion.domain import lifecycle
from clarion.domain.errors import NotFound
from clarion.domain.ids import new_id
from clarion.domain.models import AuthorType, MessageType, Session, SessionState
from clarion.domain.permissions import PermissionOption, ToolCallInfo, request_metadata
from clarion.ports import NewMessage
from clarion.store import answer_statements as clarifications
from clarion.store import bundle_rows as bundles
from clarion.store import (
    bundle_transitions,
    claim_reads,
    messages,
    successor_turns,
    summaries,
    summary_inputs,
    tasks,
)
from clarion.store import pending_actions as projections
from clarion.store import turn_rows as turns
from clarion.store.db import engine
from clarion.store.db.fastpath import hot_statements
from clarion.store.db.fastpath_rows import FastResult
from clarion.store.db.transactions import Result, Tx
from tests.whole_store import WholeStore

from .conftest import World

# (table, key column, key value): the row a write changed, read back as stored.
Stored = tuple[str, str, str] | None
Case = tuple[str, Executable, dict[str, Any], Stored]


@dataclass(frozen=True)
class Snapshot:
    rowcount: int
    fields: list[tuple[str, ...]]
    rows: list[list[str]]  # repr of each value, read by index
    by_name: list[list[str]]  # repr of each value, read by attribute
    stored: list[list[str]]  # the changed row's raw column values, untyped, after the write


def _snapshot(result: Result, returns_rows: bool, stored: Result | None) -> Snapshot:
    rows = list(result) if returns_rows else []
    return Snapshot(
        rowcount=result.rowcount if not returns_rows else -2,
        fields=[tuple(row._fields) for row in rows],
        rows=[[repr(v) for v in row] for row in rows],
        by_name=[[repr(getattr(row, k)) for k in row._fields] for row in rows],
        stored=[] if stored is None else [[repr(v) for v in row] for row in stored],
    )


def _read_back(stored: Stored) -> tuple[TextClause, dict[str, str]] | None:
    if stored is None:
        return None
    table, column, value = stored
    return text(f"SELECT * FROM {table} WHERE {column} = :v"), {"v": value}


class _Rollback(Exception):
    pass


async def _rolled_back(store: WholeStore, fn: Callable[[Tx], Awaitable[Snapshot]]) -> Snapshot:
    snapshot: Snapshot | None = None
    try:
        async with store._db.write() as tx:
            snapshot = await fn(tx)
            raise _Rollback
    except _Rollback:
        pass
    assert snapshot is not None
    return snapshot


async def _both(
    store: WholeStore,
    statement: Executable,
    params: dict[str, Any],
    rows: bool,
    *,
    stored: Stored = None,
    fast_path: bool = True,
) -> tuple[Snapshot, Snapshot]:
    """(through `Tx.execute`, through SQLAlchemy); the first must have taken the fast path, or
    (`fast_path=False`) must have fallen back to SQLAlchemy."""
    read_back = _read_back(stored)

    async def fast(tx: Tx) -> Snapshot:
        result = await tx.execute(statement, params)
        assert isinstance(result, FastResult) is fast_path
        after = None if read_back is None else await tx.execute(*read_back)
        return _snapshot(result, rows, after)

    async def slow(tx: Tx) -> Snapshot:
        def run(conn: Connection) -> Snapshot:
            result = conn.execute(statement, params)
            after = None if read_back is None else conn.execute(*read_back)
            return _snapshot(result, rows, after)

        return await tx.run_sync(run)

    return await _rolled_back(store, fast), await _rolled_back(store, slow)


async def _cases(world: World) -> list[Case]:
    """Every hot statement with parameters that make it return (or change) rows."""
    store, clock = world.store, world.clock
    session = await world.session()
    turn = await world.turn(session)
    pending = await world.bundle(session, ("db", "lang"))
    pid = str(pending[0].metadata["pending_id"])
    claimed = await world.bundle(session, ("x",))
    claimed_pid = str(claimed[0].metadata["pending_id"])
    await world.answer(claimed_pid, "x")
    # A delivered answer, an ambiguous one and one whose resend is in flight: the rows each
    # of a terminal bundle's transitions applies to.
    record: dict[lifecycle.Transition, dict[str, Any]] = {
        lifecycle.MARK_UNREAD: {},
        lifecycle.CLAIM_RESEND: {"delivery": "ambiguous"},
        lifecycle.RELEASE_RESEND: {"delivery": "ambiguous", "resend_pending": True},
        lifecycle.FINISH_RESEND: {"delivery": "ambiguous", "resend_pending": True},
    }
    answered: dict[lifecycle.Transition, str] = {}
    for transition, extra in record.items():
        [asked] = await world.bundle(session, ("y",))
        answered[transition] = str(asked.metadata["pending_id"])
        [row] = (await world.answer(answered[transition], "y")).claimed
        written = await store.confirm_delivery(answered[transition], [row.id], lifecycle.DELIVER)
        [delivered] = written.rows if written is not None else pytest.fail("not delivered")
        await world.raw_message_metadata(row.id, {**delivered.metadata, **extra})
    options = (PermissionOption("allow", "Allow", "allow_once"),)
    await store.add_permission_request(
        NewMessage(
            session_id=session.id,
            author_type=AuthorType.AGENT,
            type=MessageType.PERMISSION_REQUEST,
            content="Edit README.md",
            metadata=request_metadata(ToolCallInfo("c1", "Edit", "edit"), options),
        )
    )
    await store.cas_summary(session.task_id, expected_revision=None, data={"k": [1, "x"]})
    reserved = await store.reserve_successor(
        session.id, source_turn_id=turn.id, pending_id=claimed_pid, message_ids=[claimed[0].id]
    )
    now = clock.now()
    new_turn_id = new_id()
    new_turn: dict[str, Any] = {
        "id": new_turn_id,
        "task_session_id": session.id,
        "task_id": session.task_id,
        "started_at": now,
        "completed_at": None,
        "metadata": {"a": [1]},
        "created_at": now,
        "updated_at": now,
    }
    turn_rows = "task_session_turns"
    message: dict[str, Any] = {
        "id": new_id(),
        "task_session_id": session.id,
        "task_id": session.task_id,
        "turn_id": turn.id,
        "author_type": "agent",
        "author_id": None,
        "content": "hello",
        "requests_input": True,
        "type": "message",
        "pending_id": None,
        "metadata": {"a": {"b": 1}},
        "created_at": now,
        "updated_at": now,
    }
    msgs = "task_session_messages"
    return [
        ("session by id", tasks._SESSION_BY_ID, {"session_id": session.id}, None),
        ("sessions of task", tasks.SESSIONS_OF_TASK, {"task_id": session.task_id}, None),
        (
            "move session",
            tasks._MOVE_SESSION,
            {"session_id": session.id, "allowed": list(SessionState), "to": "IDLE", "now": now},
            ("task_sessions", "id", session.id),
        ),
        ("turn by id", turns._TURN_BY_ID, {"turn_id": turn.id}, None),
        ("session and turn", turns._SESSION_WITH_CURRENT_TURN, {"session_id": session.id}, None),
        ("current turn", turns._CURRENT_TURN, {"session_id": session.id}, None),
        ("insert turn", turns._INSERT_TURN, new_turn, (turn_rows, "id", new_turn_id)),
        (
            "set a turn's metadata",
            turns._SET_TURN_METADATA,
            {"turn_id": reserved.id, "new_metadata": {"x": True}, "new_updated_at": now},
            (turn_rows, "id", reserved.id),
        ),
        (
            "complete a turn",
            turns._COMPLETE_TURN,
            {
                "turn_id": turn.id,
                "new_metadata": {},
                "new_updated_at": now,
                "new_completed_at": now,
            },
            (turn_rows, "id", turn.id),
        ),
        (
            "live reservation",
            successor_turns._LIVE_RESERVATION,
            {"session_id": session.id},
            None,
        ),
        ("bundle rows", bundles._BUNDLE_ROWS, {"pending_id": pid}, None),
        ("bundle with session", bundles._BUNDLE_WITH_SESSION, {"pending_id": pid}, None),
        ("bundle session", bundles._BUNDLE_SESSION, {"pending_id": pid}, None),
        (
            "set metadata",
            bundles._SET_METADATA,
            {"message_id": pending[0].id, "new_metadata": {"status": "x", "n": 2}},
            (msgs, "id", pending[0].id),
        ),
        (
            "set metadata and time",
            bundles._SET_METADATA_AND_TIME,
            {"message_id": pending[1].id, "new_metadata": {}, "new_updated_at": now},
            (msgs, "id", pending[1].id),
        ),
        ("current of ids", projections._CURRENT_OF_IDS, {"ids": [session.id, "nope"]}, None),
        (
            "a task summary's inputs",
            summary_inputs.SUMMARY_INPUTS,
            {"task_id": session.task_id},
            None,
        ),
        ("pending in turns", projections._PENDING_IN_TURNS, {"turn_ids": [turn.id]}, None),
        ("permissions in turns", projections.PERMISSIONS_IN_TURNS, {"turn_ids": [turn.id]}, None),
        ("summary of task", summaries._SUMMARY_OF_TASK, {"task_id": session.task_id}, None),
        (
            "summary compare-and-set",
            summaries._CAS_UPDATE,
            {
                "b_task_id": session.task_id,
                "b_expected": 1,
                "b_revision": 2,
                "b_summary": {"k": None},
                "b_updated_at": now,
            },
            ("task_status_summaries", "task_id", session.task_id),
        ),
        ("insert message", messages._INSERT_MESSAGE, message, (msgs, "id", message["id"])),
        *(
            (f"what {claim} reads", read, {"pending_id": pid, "session_id": session.id}, None)
            for claim, read in claim_reads._CLAIM_READ.items()
        ),
        (
            "place in a turn",
            clarifications._PLACE_IN_TURN,
            {"session_id": session.id, "pending_id": pid, "turn_id": turn.id},
            None,
        ),
        (
            "place in the current turn",
            clarifications._PLACE_IN_CURRENT_TURN,
            {"session_id": session.id, "pending_id": "free"},
            None,
        ),
        *(
            (
                f"the rows {transition} applies to",
                statement,
                {
                    "pending_id": claimed_pid,
                    "session_id": session.id,
                    "message_ids": [claimed[0].id],
                }
                if bundle_transitions.names_its_rows(transition)
                else {"pending_id": answered.get(transition, pid), "session_id": session.id},
                None,
            )
            for transition, statement in bundle_transitions._OF_BUNDLE.items()
        ),
        *(
            (f"the session's rows {t} applies to", q, {"session_id": session.id}, None)
            for t, q in bundle_transitions._OF_SESSION.items()
        ),
        *(
            (
                f"one bundle's rows {t} applies to",
                q,
                {"session_id": session.id, "pending_id": pid},
                None,
            )
            for t, q in bundle_transitions._OF_SESSION_BUNDLE.items()
        ),
        *(_session_lock_cases(session.id, pid, turn.id) if store._db.is_postgres else []),
    ]


# The session locks: PostgreSQL's statements (SQLite's BEGIN IMMEDIATE already serializes).
_POSTGRES_ONLY = (
    engine._LOCK_SESSION,
    engine._LOCK_BUNDLE_SESSION,
    engine._LOCK_SESSIONS,
    engine._LOCK_TURN_SESSION,
)


def _session_lock_cases(session_id: str, pending_id: str, turn_id: str) -> list[Case]:
    key = engine.SESSION_KEY_PREFIX + session_id
    return [
        ("lock a session", engine._LOCK_SESSION, {"key": key, "session_id": session_id}, None),
        ("lock a bundle's session", engine._LOCK_BUNDLE_SESSION, {"pending_id": pending_id}, None),
        ("lock a turn's session", engine._LOCK_TURN_SESSION, {"turn_id": turn_id}, None),
        (
            "lock sessions",
            engine._LOCK_SESSIONS,
            {
                "keys": [key, engine.SESSION_KEY_PREFIX + "nope"],
                "session_ids": [session_id, "nope"],
            },
            None,
        ),
    ]


def _returns_rows(statement: Executable) -> bool:
    """A SELECT, or DML with RETURNING."""
    return not getattr(statement, "is_dml", False) or bool(getattr(statement, "_returning", ()))


async def test_every_hot_statement_has_a_case(world: World) -> None:
    covered = {id(statement) for _, statement, _, _ in await _cases(world)}
    expected = {id(statement) for statement in hot_statements()}
    if not world.store._db.is_postgres:
        expected -= {id(statement) for statement in _POSTGRES_ONLY}
    assert covered == expected


async def test_the_fast_path_returns_what_sqlalchemy_returns(world: World) -> None:
    cases = await _cases(world)
    for name, statement, params, stored in cases:
        rows = _returns_rows(statement)
        fast, slow = await _both(world.store, statement, params, rows, stored=stored)
        assert fast == slow, name
        if stored is not None:
            assert fast.stored, f"{name}: the changed row should be read back"
        if rows:
            assert fast.rows, f"{name}: the case should find rows"
        else:
            assert fast.rowcount == 1, f"{name}: the case should change one row"
    # Both ran inside the transaction that rolled back: the inserted row is not there.
    inserted = next(p for _, s, p, _ in cases if s is messages._INSERT_MESSAGE)
    with pytest.raises(NotFound):
        await world.store.get_message(inserted["id"])


async def test_misses_and_empty_results_match_too(world: World) -> None:
    """No row found, an empty IN list (SQLAlchemy renders it), a compare-and-set that loses."""
    session = await world.session()
    misses: list[tuple[Executable, dict[str, Any], bool, bool]] = [
        (tasks._SESSION_BY_ID, {"session_id": "nope"}, True, True),
        (projections._PENDING_IN_TURNS, {"turn_ids": []}, True, False),
        (
            summaries._CAS_UPDATE,
            {
                "b_task_id": session.task_id,
                "b_expected": 7,
                "b_revision": 8,
                "b_summary": {},
                "b_updated_at": world.clock.now(),
            },
            False,
            True,
        ),
    ]
    for statement, params, rows, fast_path in misses:
        fast, slow = await _both(world.store, statement, params, rows, fast_path=fast_path)
        assert fast == slow


async def test_a_constraint_error_is_sqlalchemys(world: World) -> None:
    session: Session = await world.session()
    await world.turn(session)
    row = await world.say(session)
    values: dict[str, Any] = {
        "id": row.id,
        "task_session_id": session.id,
        "task_id": session.task_id,
        "turn_id": row.turn_id,
        "author_type": "agent",
        "author_id": None,
        "content": "again",
        "requests_input": False,
        "type": "message",
        "pending_id": None,
        "metadata": {},
        "created_at": world.clock.now(),
        "updated_at": world.clock.now(),
    }
    with pytest.raises(IntegrityError):
        async with world.store._db.write() as tx:
            await tx.execute(messages._INSERT_MESSAGE, values)
    # The failed transaction rolled back; the store goes on.
    assert (await world.store.get_message(row.id)).content == "hi"


async def test_a_value_a_type_refuses_is_sqlalchemys_statement_error(world: World) -> None:
    """The fast path hands it to SQLAlchemy, which raises it as `StatementError`."""
    session = await world.session()
    params = {
        "session_id": session.id,
        "allowed": ["CREATED"],
        "to": "IDLE",
        "now": datetime(2026, 3, 1, 12, 0),  # naive: UtcDateTime refuses it
    }
    with pytest.raises(StatementError, match="naive datetime"):
        async with world.store._db.write() as tx:
            await tx.execute(tasks._MOVE_SESSION, params)
    assert (await world.store.get_session(session.id)).state == SessionState.CREATED
