"""PostgreSQL: connections kept checked out between transactions, each transaction's isolation
set as it begins.

Imported only by `clarion.store.db.engine`. Taking a connection from SQLAlchemy's pool and giving
it back, with the `AsyncConnection` around it, cost two greenlet switches and the pool's
bookkeeping on every transaction: about as much CPU as the statements of a short one. A live
ask -> answer cycle runs about ten transactions, so `KeptConnections` keeps up to `keep`
connections out of the pool while they are idle and hands them to the next transaction. Nor
does a transaction open a SQLAlchemy transaction first (two more greenlet switches, to begin and
to commit): the driver's transaction begins with the first statement, as it did under
SQLAlchemy's; SQLAlchemy begins its own only around a statement that goes through it, and the
block's end commits whichever there is (`_end`).

One set of kept connections serves every kind of transaction: the isolation level it needs
(READ COMMITTED for writes, REPEATABLE READ for reads, none for a block of one statement) is set
on the driver adaptor before the transaction begins, which is when the adaptor reads it (it
sends BEGIN lazily, with the first statement), and put back after. SQLAlchemy's pool did the
same with each engine copy's `isolation_level` option, at checkout and checkin.

A transaction that fails gives its connection back to the pool instead of keeping it. If the
failure invalidated the connection (PostgreSQL dropped it: a restart), the idle kept ones go back
too: they are probably gone as well, and the pool, which SQLAlchemy then invalidates, opens fresh
ones, as before connections were kept. `keep` stays below the pool's size, so the pool always
has connections for what does not go through here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from clarion.store.db.fastpath_asyncpg import raise_as_sqlalchemy

log = logging.getLogger(__name__)

# The asyncpg adaptor's names for the isolation levels (its `isolation_level` attribute).
READ_COMMITTED = "read_committed"
REPEATABLE_READ = "repeatable_read"
AUTOCOMMIT = "autocommit"


class KeptConnections:
    __slots__ = ("_closed", "_engine", "_idle", "_keep")

    def __init__(self, engine: AsyncEngine, keep: int) -> None:
        self._engine = engine
        self._keep = keep
        self._idle: list[AsyncConnection] = []
        self._closed = False

    @property
    def idle(self) -> int:
        return len(self._idle)

    @asynccontextmanager
    async def transaction(self, isolation: str) -> AsyncIterator[AsyncConnection]:
        """A connection in a transaction at `isolation`, committed when the block ends, rolled
        back when it raises."""
        conn = self._idle.pop() if self._idle else await self._engine.connect()
        adaptor = _adaptor(conn)
        before = adaptor.isolation_level
        adaptor.isolation_level = isolation
        kept = False
        try:
            try:
                yield conn
            except BaseException:
                await _roll_back_after(conn, adaptor)
                raise
            await _end(conn, adaptor, commit=True)
            kept = not self._closed and len(self._idle) < self._keep and not conn.invalidated
        finally:
            adaptor.isolation_level = before
            if kept:
                self._idle.append(conn)
            else:
                if conn.invalidated:
                    self._release_idle()
                await conn.close()

    def close(self) -> None:
        """Give the idle connections back to the pool (which the engine's owner disposes of);
        none is kept from now on. Called once no transaction runs."""
        self._closed = True
        self._release_idle()

    def _release_idle(self) -> None:
        idle, self._idle = self._idle, []
        if idle:
            log.info("kept database connections released", extra={"connections": len(idle)})
        for conn in idle:
            # Checking an idle connection back in needs no driver call (the engine resets
            # nothing on return), so it is done here without awaiting.
            if conn.sync_connection is not None:
                conn.sync_connection.close()


async def _end(conn: AsyncConnection, adaptor: Any, *, commit: bool) -> None:
    """COMMIT or ROLLBACK the block's transaction. SQLAlchemy's, when a statement went through
    it: it began its transaction around that statement, with the driver's inside. Otherwise
    the driver's alone, which the fast path began (`fastpath_asyncpg`), ended on the driver as
    SQLAlchemy's adaptor ends it, with no greenlet switch and no SQLAlchemy transaction; a
    failure goes through SQLAlchemy's handling all the same (a lost connection invalidated)."""
    if conn.in_transaction():
        await (conn.commit() if commit else conn.rollback())
        return
    transaction = adaptor._transaction
    if transaction is None:  # no statement ran, or it ran in autocommit
        return
    sql = "COMMIT" if commit else "ROLLBACK"
    try:
        try:
            await (transaction.commit() if commit else transaction.rollback())
        except Exception as error:
            adaptor._handle_exception(error)  # raises it as the adaptor's DBAPI error
    except Exception as error:
        await conn.run_sync(raise_as_sqlalchemy, error, sql, ())
    finally:
        adaptor._transaction = None  # ended, or failed to: either way not the next one's


async def _roll_back_after(conn: AsyncConnection, adaptor: Any) -> None:
    """The rollback of a block that raised: its own failure is logged, not raised, so the
    block's error is what the caller sees; the connection is invalidated, so not kept."""
    try:
        await _end(conn, adaptor, commit=False)
    except Exception:
        log.warning("rollback failed; the connection is dropped", exc_info=True)
        if not conn.invalidated:
            await conn.invalidate()


def _adaptor(conn: AsyncConnection) -> Any:
    """The asyncpg adaptor (SQLAlchemy's DBAPI connection) under `conn`."""
    sync = conn.sync_connection
    assert sync is not None  # a connected AsyncConnection
    return sync.connection.dbapi_connection
