"""SQLite specifics: per-connection settings, the BEGIN mode, and inline transactions.

Imported only by `clarion.store.engine`. Every connection runs in WAL mode (readers never wait
on the writer) with foreign keys on, a busy timeout and `synchronous=NORMAL`; the driver's own
transaction handling is switched off so a "begin" hook chooses the mode: `BEGIN IMMEDIATE` for
writers, so two writers serialize at BEGIN instead of failing when a deferred read lock is
upgraded, plain `BEGIN` for readers.

Transactions run inline on the event loop's thread through the synchronous driver (see
`clarion.store.tx` for why). The writers of one process queue on an asyncio lock before BEGIN,
so the loop never sits in SQLite's busy wait behind a writer of its own; only another process's
write transaction (the `clarion token` command, say) can make it wait, for as long as that
transaction lasts. Connections stay open between transactions: a pool checkout would cost more
than most of the statements in a transaction.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine

from clarion.store.tx import InlineTx

BUSY_TIMEOUT_MS = 30_000
# Execution option marking a connection whose transaction will write.
WRITE_OPTION = "clarion_write"


def configure(engine: Engine) -> None:
    """Install the connection settings and the BEGIN hook on `engine` (sync or an async
    engine's `sync_engine`)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN out of the driver's hands so the "begin" hook below decides its mode.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        writing = bool(conn.get_execution_options().get(WRITE_OPTION))
        conn.exec_driver_sql("BEGIN IMMEDIATE" if writing else "BEGIN")


# One writer queue per database file and event loop, shared by every store of this process
# that opens the file (tests open several), so none of them blocks the loop on another's lock.
_WRITER_QUEUES: weakref.WeakValueDictionary[tuple[str, int], asyncio.Lock] = (
    weakref.WeakValueDictionary()
)


def _writer_queue(database: str, loop: asyncio.AbstractEventLoop) -> asyncio.Lock:
    key = (database, id(loop))
    queue = _WRITER_QUEUES.get(key)
    if queue is None:
        queue = asyncio.Lock()
        _WRITER_QUEUES[key] = queue
    return queue


class InlineSqlite:
    """Read and write transactions on the file `url` names, run on the calling thread."""

    def __init__(self, url: URL) -> None:
        self._engine = create_engine(
            url.set(drivername="sqlite+pysqlite"),
            connect_args={
                "timeout": BUSY_TIMEOUT_MS / 1000,
                # Connections are made and used on the loop's thread, but disposal may run on
                # another (a test's teardown, interpreter exit).
                "check_same_thread": False,
            },
            pool_reset_on_return=None,
        )
        configure(self._engine)
        self._writer_engine = self._engine.execution_options(**{WRITE_OPTION: True})
        self._database = str(Path(url.database or "").expanduser().resolve())
        self._writers: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._idle_readers: list[Connection] = []
        self._idle_writers: list[Connection] = []

    @asynccontextmanager
    async def read(self) -> AsyncIterator[InlineTx]:
        with self._transaction(self._idle_readers, self._engine) as conn:
            yield InlineTx(conn)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[InlineTx]:
        async with self._writer_queue():
            with self._transaction(self._idle_writers, self._writer_engine) as conn:
                yield InlineTx(conn)

    @contextmanager
    def _transaction(self, idle: list[Connection], engine: Engine) -> Iterator[Connection]:
        conn = idle.pop() if idle else engine.connect()
        try:
            with conn.begin():
                yield conn
        finally:
            if conn.invalidated or conn.closed:
                conn.close()
            else:
                idle.append(conn)

    def _writer_queue(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._writers is None or self._writers[0] is not loop:
            self._writers = (loop, _writer_queue(self._database, loop))
        return self._writers[1]

    def close(self) -> None:
        for conn in (*self._idle_readers, *self._idle_writers):
            conn.close()
        self._idle_readers.clear()
        self._idle_writers.clear()
        self._engine.dispose()
