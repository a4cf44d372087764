"""Opening the database: URL mapping, read and write transactions, and write serialization.

Imported by the rest of `clarion.store` and by `clarion.server.wiring`; nothing else.

SQLite: see `clarion.store.db.sqlite` (WAL, `BEGIN IMMEDIATE` writers, transactions run inline).

PostgreSQL: writes that touch one session's clarification state take a per-session advisory
lock and lock the session row; reads run under REPEATABLE READ so a multi-statement read sees
one snapshot. A read of one statement needs no transaction around it (a statement always sees
one snapshot), so `read_one` runs it in autocommit: no BEGIN and COMMIT, two round trips fewer;
`write_one` does the same for a write of one statement that takes no lock.
The hot statements run on the asyncpg connection itself (`clarion.store.db.fastpath_asyncpg`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import TextualSelect, column, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from clarion.store.db import sqlite
from clarion.store.db.fastpath import Plans, hot
from clarion.store.db.fastpath_asyncpg import AsyncpgPlan
from clarion.store.db.kept_connections import (
    AUTOCOMMIT,
    READ_COMMITTED,
    REPEATABLE_READ,
    KeptConnections,
)
from clarion.store.db.owner_fence import (
    READ_OWN_ROW,
    OwnerFence,
    check_owner,
    check_registered,
)
from clarion.store.db.transactions import AsyncTx, Tx

log = logging.getLogger(__name__)

# Fifteen connections at most, as before, but all of them kept (see open_engine).
POOL_SIZE = 15
POOL_OVERFLOW = 0
# Idle connections a store keeps checked out between its transactions (kept_connections.py);
# the rest of the pool stays for the others (migrations, the single-server check).
KEPT_CONNECTIONS = 10


def async_url(url: str) -> str:
    """Map a user URL (`sqlite:///PATH`, `postgresql://...`) to its async driver form."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    raise ValueError(f"unsupported database URL {url!r}: use sqlite:///PATH or postgresql://...")


def open_engine(url: str) -> AsyncEngine:
    """An AsyncEngine for `url`, configured for Clarion's transaction discipline."""
    target = make_url(async_url(url))
    if target.get_backend_name() == "sqlite":
        return _sqlite_engine(target.render_as_string(hide_password=False), target.database)
    # No pre-ping: it cost a round trip on every checkout, as much as BEGIN itself. A
    # connection PostgreSQL dropped (a restart) fails its next statement instead; SQLAlchemy
    # recognises the disconnect and invalidates the whole pool, so the transactions after it
    # get fresh connections. Fifteen pooled connections, none beyond: a connection opened for a
    # burst and closed after it (an "overflow") cost a connect and, on the next burst, a cold
    # prepared-statement cache, so the CPU per cycle grew with the concurrent sessions; a burst
    # wider than the pool now waits for a kept connection.
    return create_async_engine(
        target, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW, pool_reset_on_return=None
    )


def _sqlite_engine(url: str, database: str | None) -> AsyncEngine:
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(
        url,
        connect_args={"timeout": sqlite.BUSY_TIMEOUT_MS / 1000},
        pool_reset_on_return=None,
    )
    sqlite.configure(engine.sync_engine)
    return engine


_LOCK_KEY = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")
# A session's advisory key is this prefix and its id (kandev's key, kept).
SESSION_KEY_PREFIX = "task-session-turn:"

# A session's locks in one statement, in the order every writer takes them: first the advisory
# key (the materialized CTE; no row reaches the row lock above the join without it), then the
# session row. A statement per lock was a round trip per locked write.
_SESSION_KEY = "WITH k AS MATERIALIZED (SELECT pg_advisory_xact_lock(hashtextextended(:key, 0)))"
# Many sessions: every key in array order (counted, so the CTE runs to the end), then the rows
# in id order (the row locks are taken after the sort).
_SESSION_KEYS = (
    "WITH k AS MATERIALIZED (SELECT count(*) FROM ("
    "SELECT pg_advisory_xact_lock(hashtextextended(x.key, 0)) "
    "FROM unnest(CAST(:keys AS text[])) WITH ORDINALITY AS x(key, n) ORDER BY x.n) AS locked)"
)
# The session of a bundle, found and locked in one statement: the pending id names its session
# through any of its rows (a bundle never moves between sessions). No such bundle: no key, no
# row, nothing locked.
_BUNDLE_SESSION_KEY = (
    "WITH b AS MATERIALIZED (SELECT task_session_id AS id FROM task_session_messages "
    "WHERE pending_id = :pending_id LIMIT 1), "
    "k AS MATERIALIZED (SELECT pg_advisory_xact_lock(hashtextextended("
    f"'{SESSION_KEY_PREFIX}' || b.id, 0)) FROM b)"
)
# The session of a turn, found and locked the same way (a turn never moves between sessions).
_TURN_SESSION_KEY = (
    "WITH b AS MATERIALIZED (SELECT task_session_id AS id FROM task_session_turns "
    "WHERE id = :turn_id), "
    "k AS MATERIALIZED (SELECT pg_advisory_xact_lock(hashtextextended("
    f"'{SESSION_KEY_PREFIX}' || b.id, 0)) FROM b)"
)
_ONE_ROW = " FROM task_sessions AS s CROSS JOIN k WHERE s.id = :session_id"
_BUNDLE_ROW = " FROM task_sessions AS s CROSS JOIN k WHERE s.id = (SELECT id FROM b)"
_MANY_ROWS = (
    " FROM task_sessions AS s CROSS JOIN k WHERE s.id = ANY(CAST(:session_ids AS text[]))"
    " ORDER BY s.id"
)


def _session_locks(head: str, rows: str) -> TextualSelect:
    # The owner comes back too: in cluster mode it is the fence (store/db/owner_fence.py). Run
    # by every session write, so on the fast path (its columns declared for the plan's rows).
    sql = head + " SELECT s.id, s.owner_replica_id AS owner" + rows + " FOR UPDATE OF s"
    return hot(text(sql).columns(column("id"), column("owner")))


_LOCK_SESSION = _session_locks(_SESSION_KEY, _ONE_ROW)
_LOCK_BUNDLE_SESSION = _session_locks(_BUNDLE_SESSION_KEY, _BUNDLE_ROW)
_LOCK_SESSIONS = _session_locks(_SESSION_KEYS, _MANY_ROWS)
_LOCK_TURN_SESSION = _session_locks(_TURN_SESSION_KEY, _BUNDLE_ROW)


class Db:
    """Transactions with the discipline above. One per store; shares the engine's pool.

    Every use of a pooled connection goes through `read()` or `write()`, whose transaction
    always ends in COMMIT or ROLLBACK, so the engines skip the pool's reset-on-return
    rollback (one more driver round trip per call).

    On PostgreSQL the transactions run on connections kept between them (`KeptConnections`),
    each at the isolation level of its kind: a transaction then costs BEGIN/COMMIT, with no
    pool checkout around it.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.is_postgres = engine.dialect.name == "postgresql"
        self._inline: sqlite.InlineSqlite | None = None
        # Cluster mode: the replica this store writes for; every session write checks that
        # the session is still its, and new sessions are its (store/db/owner_fence.py).
        self.fence: OwnerFence | None = None
        self._plans: Plans[AsyncpgPlan] | None = None
        if self.is_postgres:
            self._plans = Plans(engine.dialect, AsyncpgPlan)
            self._kept = KeptConnections(engine, KEPT_CONNECTIONS)
        else:
            self._inline = sqlite.InlineSqlite(engine.url)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Tx]:
        """A read-only transaction over one consistent snapshot; never waits on a writer."""
        if self._inline is not None:
            async with self._inline.read() as tx:
                yield tx
            return
        async with self._kept.transaction(REPEATABLE_READ) as conn:
            yield AsyncTx(conn, self._plans)

    @asynccontextmanager
    async def read_one(self) -> AsyncIterator[Tx]:
        """`read()` for a block that runs exactly one statement. On PostgreSQL it runs outside
        a transaction (the statement is its own snapshot), saving BEGIN and COMMIT; a block
        with a second statement must use `read()`, or its statements may see different
        snapshots."""
        if self._inline is not None:
            async with self._inline.read() as tx:
                yield tx
            return
        async with self._kept.transaction(AUTOCOMMIT) as conn:
            yield AsyncTx(conn, self._plans)

    @asynccontextmanager
    async def write_one(self) -> AsyncIterator[Tx]:
        """`write()` for a block whose only change is one statement and that takes no lock
        (a compare-and-set, a guarded move). On PostgreSQL it runs outside a transaction,
        saving BEGIN and COMMIT: under READ COMMITTED each statement of a transaction sees a
        snapshot of its own anyway, and one statement is atomic alone, so without a lock to
        hold or a second change to keep with the first, the transaction added nothing. On
        SQLite it is `write()` (the write lock is what orders writers there)."""
        if self._inline is not None:
            async with self._inline.write() as tx:
                yield tx
            return
        async with self._kept.transaction(AUTOCOMMIT) as conn:
            yield AsyncTx(conn, self._plans)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        """A write transaction; on SQLite it holds the database write lock from its start."""
        if self._inline is not None:
            async with self._inline.write() as tx:
                yield tx
            return
        async with self._kept.transaction(READ_COMMITTED) as conn:
            yield AsyncTx(conn, self._plans)

    def close(self) -> None:
        """Close the inline SQLite connections, or give the kept PostgreSQL ones back to the
        pool (the async engine is disposed by its owner)."""
        if self._inline is not None:
            self._inline.close()
        else:
            self._kept.close()

    async def lock_key(self, conn: Tx, key: str) -> None:
        """Serialize writers on `key` until the transaction ends (SQLite already is serial)."""
        if self.is_postgres:
            await conn.execute(_LOCK_KEY, {"key": key})

    async def lock_session(self, conn: Tx, session_id: str) -> None:
        """Serialize every write to one session's turns and clarification rows.

        On SQLite `BEGIN IMMEDIATE` already holds the only write lock, so there is nothing to
        take (and no statement to spend)."""
        if self.is_postgres:
            result = await conn.execute(
                _LOCK_SESSION,
                {"key": _session_key(session_id), "session_id": session_id},
            )
            self._check_fence(list(result))

    async def lock_bundle_session(self, conn: Tx, pending_id: str) -> str | None:
        """PostgreSQL: the session of bundle `pending_id`, locked exactly as `lock_session`
        locks it, in one statement instead of a read and then the lock; None when there is no
        such bundle (nothing is locked)."""
        result = await conn.execute(_LOCK_BUNDLE_SESSION, {"pending_id": pending_id})
        rows = list(result)
        self._check_fence(rows)
        return str(rows[0].id) if rows else None

    async def lock_turn_session(self, conn: Tx, turn_id: str) -> str | None:
        """PostgreSQL: the session of turn `turn_id`, locked exactly as `lock_session` locks
        it, in one statement; None when there is no such turn (nothing is locked)."""
        result = await conn.execute(_LOCK_TURN_SESSION, {"turn_id": turn_id})
        rows = list(result)
        self._check_fence(rows)
        return str(rows[0].id) if rows else None

    async def lock_sessions(self, conn: Tx, session_ids: Sequence[str]) -> None:
        """`lock_session` for many sessions, in id order (so two callers cannot deadlock),
        with two statements in all rather than two per session."""
        if not self.is_postgres or not session_ids:
            return
        ordered = sorted(set(session_ids))
        result = await conn.execute(
            _LOCK_SESSIONS,
            {"keys": [_session_key(s) for s in ordered], "session_ids": ordered},
        )
        self._check_fence(list(result))

    @property
    def owner(self) -> str | None:
        """Cluster mode: the replica new sessions belong to."""
        return None if self.fence is None else self.fence.replica_id

    async def check_registered(self, conn: Tx) -> None:
        """Cluster mode, for a write that creates a session (there is no session to lock
        yet): this replica's own row, held FOR KEY SHARE until the transaction ends. An
        adopter deletes it in the adopting transaction, so the creation either commits first
        (and is adopted with the rest) or is refused: a replica taken for gone could otherwise
        create a session nobody would adopt."""
        if self.fence is not None:
            row = (await conn.execute(READ_OWN_ROW, {"replica_id": self.fence.replica_id})).first()
            check_registered(self.fence, row)

    def _check_fence(self, rows: Sequence[Any]) -> None:
        """Cluster mode: each locked session must still be this replica's (db/owner_fence.py)."""
        if self.fence is None:
            return
        for row in rows:
            check_owner(self.fence, row.id, row.owner)


def _session_key(session_id: str) -> str:
    return SESSION_KEY_PREFIX + session_id
