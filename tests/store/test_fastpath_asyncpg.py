"""The PostgreSQL fast path (asyncpg) where it meets SQLAlchemy's own: the prepared-statement
cache both use, and a connection PostgreSQL dropped. What every hot statement returns both ways
is compared on both databases in test_fastpath.py."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from clarion.domain.lifecycle import DELIVER
from clarion.store import tasks
from clarion.store.bundle_transitions import rows_of_bundle
from clarion.store.db.fastpath_rows import FastResult

from .conftest import World

pytestmark = pytest.mark.postgres


@pytest.fixture
def db_kind() -> str:
    return "postgres"


async def test_postgres_shares_one_prepared_statement_with_sqlalchemy(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan's SQL is SQLAlchemy's to the character (an IN list expanded as it expands
    it), so on one connection the two ways prepare a statement once between them."""
    session = await world.session()
    await world.turn(session)
    claimed = await world.bundle(session, ("x", "y"))
    pid = str(claimed[0].metadata["pending_id"])
    prepared: list[str] = []
    prepare = asyncpg.Connection.prepare

    async def counted(self: asyncpg.Connection, query: str, *args: Any, **kwargs: Any) -> Any:
        prepared.append(query)
        return await prepare(self, query, *args, **kwargs)

    monkeypatch.setattr(asyncpg.Connection, "prepare", counted)
    params = {"message_ids": [m.id for m in claimed], "pending_id": pid}
    async with world.store._db.write() as tx:
        fast = await tx.execute(rows_of_bundle(DELIVER), params)
        assert isinstance(fast, FastResult)
        slow = await tx.run_sync(lambda c: list(c.execute(rows_of_bundle(DELIVER), params)))
    assert [tuple(r) for r in fast] == [tuple(r) for r in slow]
    assert len([q for q in prepared if "response_delivery_pending" in q]) <= 1, prepared


async def _on_a_dropped_connection(world: World, session_id: str, sqlalchemy: bool) -> None:
    """A hot statement in a transaction whose backend PostgreSQL has just ended."""
    params = {"session_id": session_id}
    async with world.store._db.write() as tx:
        pid = (await tx.execute(text("SELECT pg_backend_pid()"))).scalar()
        async with world.store.engine.connect() as other:
            await other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        if sqlalchemy:
            await tx.run_sync(lambda c: c.execute(tasks._SESSION_BY_ID, params))
        else:
            await tx.execute(tasks._SESSION_BY_ID, params)


async def test_postgres_a_dropped_connection_fails_as_through_sqlalchemy_and_the_store_recovers(
    world: World,
) -> None:
    """PostgreSQL ends the backend under an open transaction: the hot statement raises a
    SQLAlchemy DBAPIError marked connection_invalidated, as the SQLAlchemy path does, and the
    next transaction gets a fresh connection."""
    session = await world.session()
    failures: list[DBAPIError] = []
    for through_sqlalchemy in (False, True):
        with pytest.raises(DBAPIError) as raised:
            await _on_a_dropped_connection(world, session.id, through_sqlalchemy)
        failures.append(raised.value)
        assert (await world.store.get_session(session.id)).id == session.id
    # The class depends on when asyncpg noticed the closed socket (InterfaceError "connection
    # is closed" or DBAPIError "closed in the middle of operation"), not on the path.
    assert [f.connection_invalidated for f in failures] == [True, True], failures
