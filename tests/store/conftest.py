"""Fixtures for the store contract suite: a migrated store per test and a small world builder.

Every test here runs once per backend through the `db_kind` fixture of tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from clarion.domain.ids import new_id
from clarion.domain.lifecycle import CLAIM
from clarion.domain.models import (
    Answer,
    ClarificationResponse,
    Message,
    MessageType,
    Session,
    SessionState,
    Turn,
)
from clarion.ports import NewMessage, Written
from clarion.runtime.clock import ManualClock
from clarion.store.db.fastpath import SqlitePlan
from clarion.store.db.fastpath_asyncpg import AsyncpgPlan
from clarion.store.db.fastpath_rows import FastResult
from clarion.store.db.schema import task_session_messages, task_session_turns, task_sessions
from tests.whole_store import WholeStore, open_whole_store


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC))


@pytest.fixture
async def store(store_url: str, clock: ManualClock) -> AsyncIterator[WholeStore]:
    async with open_whole_store(store_url, clock) as opened:
        yield opened


class World:
    """Builds tasks, sessions, turns and bundles with a few calls; raw writes for odd data."""

    def __init__(self, store: WholeStore, clock: ManualClock) -> None:
        self.store = store
        self.clock = clock

    async def session(self, *, task_id: str | None = None) -> Session:
        if task_id is None:
            workspace = await self.store.ensure_workspace("default")
            task = await self.store.create_task(
                title="t", description="d", workspace_id=workspace.id
            )
            task_id = task.id
        return await self.store.create_session(task_id=task_id, agent="builtin", is_primary=True)

    async def owners(self) -> dict[str, str | None]:
        """Every session's owning replica, by session id."""
        async with self.store.engine.connect() as conn:
            rows = await conn.execute(select(task_sessions.c.id, task_sessions.c.owner_replica_id))
            return {str(session_id): owner for session_id, owner in rows}

    async def own(self, session_id: str, owner: str) -> None:
        async with self.store.engine.begin() as conn:
            await conn.execute(
                update(task_sessions)
                .where(task_sessions.c.id == session_id)
                .values(owner_replica_id=owner)
            )

    async def turn(self, session: Session, *, advance: float = 1.0, **kwargs: Any) -> Turn:
        self.clock.advance(advance)
        return await self.store.create_turn(session.id, **kwargs)

    async def bundle(
        self, session: Session, questions: Sequence[str] = ("db",), **options: Any
    ) -> tuple[Message, ...]:
        """The rows of a new bundle (`write_bundle`'s options)."""
        return (await self.write_bundle(session, questions, **options)).rows

    async def write_bundle(
        self,
        session: Session,
        questions: Sequence[str] = ("db",),
        *,
        turn_id: str | None = None,
        pending_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
        session_state: SessionState | None = None,
    ) -> Written:
        """`bundle`, returning everything the store's write returned."""
        pid = pending_id or new_id()
        rows = [
            NewMessage(
                session_id=session.id,
                author_type="agent",
                type=MessageType.CLARIFICATION_REQUEST,
                content=f"question {qid}?",
                metadata={
                    "pending_id": pid,
                    "question_id": qid,
                    "question_index": index,
                    "question_total": len(questions),
                    "status": "pending",
                    **(extra or {}),
                },
                requests_input=index == len(questions) - 1,
            )
            for index, qid in enumerate(questions)
        ]
        return await self.store.create_bundle(
            session.id, rows, turn_id=turn_id, session_state=session_state
        )

    async def say(self, session: Session, text: str = "hi", **kwargs: Any) -> Message:
        return await self.store.add_message(
            NewMessage(
                session_id=session.id, author_type="agent", type="message", content=text, **kwargs
            )
        )

    async def raw_turn_metadata(self, turn_id: str, raw: str | Mapping[str, Any]) -> None:
        text = raw if isinstance(raw, str) else json.dumps(raw)
        async with self.store.engine.begin() as conn:
            await conn.execute(
                update(task_session_turns)
                .where(task_session_turns.c.id == turn_id)
                .values(metadata=json.loads(text))
            )

    async def raw_message_metadata(self, message_id: str, meta: Mapping[str, Any]) -> None:
        async with self.store.engine.begin() as conn:
            await conn.execute(
                update(task_session_messages)
                .where(task_session_messages.c.id == message_id)
                .values(metadata=dict(meta))
            )

    async def answer(self, pending_id: str, *question_ids: str) -> Any:
        response = ClarificationResponse(
            pending_id=pending_id,
            answers=tuple(Answer(q, (f"{q}_opt1",), "note") for q in question_ids),
            rejected=False,
        )
        return await self.store.claim_response(response, CLAIM, now=self.clock.now())

    async def reject(self, pending_id: str, reason: str = "not now") -> Any:
        response = ClarificationResponse(
            pending_id=pending_id, answers=(), rejected=True, reject_reason=reason
        )
        return await self.store.claim_response(response, CLAIM, now=self.clock.now())

    async def status(self, message_id: str) -> Any:
        return (await self.store.get_message(message_id)).metadata.get("status")


@pytest.fixture
def world(store: WholeStore, clock: ManualClock) -> World:
    return World(store, clock)


async def until_a_backend_waits_on_a_lock(
    store: WholeStore, ceiling_s: float = 60.0, *, count: int = 1
) -> None:
    """PostgreSQL: until `count` transactions of the test's database wait on a lock (a
    ceiling, never a delay)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    async with asyncio.timeout(ceiling_s):
        while True:
            async with store.engine.connect() as conn:
                if await conn.scalar(query) >= count:
                    return
            await asyncio.sleep(0.02)


@contextlib.contextmanager
def statements_run(store: WholeStore) -> Iterator[list[str]]:
    """The SQL of every statement sent to the database while the block runs, whitespace
    folded: SQLAlchemy's, and the hot statements the fast path ran below it."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(" ".join(str(args[2]).split()))

    def fast(sql: str) -> None:
        seen.append(" ".join(sql.split()))

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        with fast_path_statements(fast):
            yield seen
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)


@contextlib.contextmanager
def transaction_control_sent(store: WholeStore) -> Iterator[list[str]]:
    """PostgreSQL: the BEGIN and COMMIT (or ROLLBACK) statements the driver sent while the
    block ran, each one round trip, which `statements_run` does not see. asyncpg sends them
    with `Connection.execute` and no arguments, on whichever connection (kept or pooled)."""
    seen: list[str] = []
    execute = asyncpg.Connection.execute

    async def recording(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        verb = query.split(" ")[0].rstrip(";").upper()
        if not args and verb in ("BEGIN", "COMMIT", "ROLLBACK"):
            seen.append(verb)
        return await execute(self, query, *args, **kwargs)

    asyncpg.Connection.execute = recording
    try:
        yield seen
    finally:
        asyncpg.Connection.execute = execute


@contextlib.contextmanager
def fast_path_statements(seen: Callable[[str], None]) -> Iterator[None]:
    """Calls `seen` with the SQL of each statement a fast-path plan ran (not those it handed
    back to SQLAlchemy), on either database, while the block runs."""
    sqlite_run, asyncpg_run = SqlitePlan.run, AsyncpgPlan.run

    def on_sqlite(
        self: SqlitePlan, dbapi: sqlite3.Connection, given: Mapping[str, Any]
    ) -> FastResult | None:
        result = sqlite_run(self, dbapi, given)
        if result is not None:
            seen(self._sql)
        return result

    async def on_asyncpg(
        self: AsyncpgPlan, conn: AsyncConnection, given: Mapping[str, Any]
    ) -> FastResult | None:
        result = await asyncpg_run(self, conn, given)
        if result is not None:
            seen(self._sql)
        return result

    SqlitePlan.run = on_sqlite  # type: ignore[method-assign]
    AsyncpgPlan.run = on_asyncpg  # type: ignore[method-assign]
    try:
        yield
    finally:
        SqlitePlan.run = sqlite_run  # type: ignore[method-assign]
        AsyncpgPlan.run = asyncpg_run  # type: ignore[method-assign]
