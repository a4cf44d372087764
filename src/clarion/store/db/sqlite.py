"""SQLite specifics: per-connection settings, the BEGIN mode, and inline transactions.

Imported only by `clarion.store.db.engine`. Every connection runs in WAL mode (readers never wait
on the writer) with foreign keys on, a busy timeout and `synchronous=NORMAL`; the driver's own
transaction handling is switched off so a "begin" hook chooses the mode: `BEGIN IMMEDIATE` for
writers, so two writers serialize at BEGIN instead of failing when a deferred read lock is
upgraded, plain `BEGIN` for readers.

Transactions run inline on the event loop's thread through the synchronous driver (see
`clarion.store.db.transactions` for why). The writers of one process queue on an asyncio lock
before BEGIN, so the loop never sits in SQLite's busy wait behind a writer of its own; only
another process's write transaction (the `clarion token` command, say) can make it wait, for as
long as that transaction lasts. Connections stay open between transactions: a pool checkout
would cost more than most of the statements in a transaction.

WAL checkpoints (copying committed pages back into the database file, with an fsync) would
otherwise run inside whichever commit crosses SQLite's threshold, on the loop's thread, and
stall every request for their duration (tens of milliseconds here, more when the disk is slow).
So automatic checkpoints are off on the inline connections, and a passive checkpoint runs on a
worker thread after every `CHECKPOINT_EVERY` write transactions; it never blocks a reader.

A writer starts the WAL again from its beginning only when the log was fully copied when its
transaction began. Under writes that never pause, a checkpoint running beside them always ends
behind the newest commit, so the log never restarted and the WAL file grew without end (60 MB
every 5 s in the throughput benchmark, over 300 MB for a 3 MB database). So each checkpoint is
followed by a second one, which copies the few frames committed meanwhile while this process's
writers wait in their queue (the bulk copy and its fsync are not inside that wait); unless a
reader still holds an older snapshot, the next write then restarts the log.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError

from clarion.store.db.fastpath import Plans, SqlitePlan
from clarion.store.db.transactions import InlineTx

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000
# Execution option marking a connection whose transaction will write.
WRITE_OPTION = "clarion_write"
# A few pages per transaction: about SQLite's own 1,000-page threshold.
CHECKPOINT_EVERY = 250


def configure(engine: Engine, *, auto_checkpoint: bool = True) -> None:
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
            if not auto_checkpoint:
                cursor.execute("PRAGMA wal_autocheckpoint=0")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        writing = bool(conn.get_execution_options().get(WRITE_OPTION))
        sql = "BEGIN IMMEDIATE" if writing else "BEGIN"
        # On the DBAPI connection itself: through `exec_driver_sql` SQLAlchemy's execution
        # machinery cost as much as the BEGIN, once per transaction. A failure (the busy
        # timeout ran out) still raises SQLAlchemy's exception class.
        dbapi_error = conn.dialect.loaded_dbapi.Error
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(sql)
        except dbapi_error as err:
            raise DBAPIError.instance(sql, (), err, dbapi_error, dialect=conn.dialect) from err
        finally:
            cursor.close()


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
        configure(self._engine, auto_checkpoint=False)
        self._writer_engine = self._engine.execution_options(**{WRITE_OPTION: True})
        self._database = str(Path(url.database or "").expanduser().resolve())
        self._writers: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._idle_readers: list[Connection] = []
        self._idle_writers: list[Connection] = []
        self._checkpoints = _Checkpointer(self._database, self._writer_queue)
        self._plans = Plans(self._engine.dialect, SqlitePlan)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[InlineTx]:
        with self._transaction(self._idle_readers, self._engine) as conn:
            yield InlineTx(conn, self._plans)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[InlineTx]:
        async with self._writer_queue():
            with self._transaction(self._idle_writers, self._writer_engine) as conn:
                yield InlineTx(conn, self._plans)
        self._checkpoints.after_write()

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

    @property
    def checkpoints(self) -> int:
        """Background checkpoint rounds completed so far."""
        return self._checkpoints.done

    async def checkpoints_settled(self) -> int:
        """The rounds completed once the one in flight, if any, has ended."""
        await self._checkpoints.settled()
        return self._checkpoints.done

    def close(self) -> None:
        self._checkpoints.close()
        for conn in (*self._idle_readers, *self._idle_writers):
            conn.close()
        self._idle_readers.clear()
        self._idle_writers.clear()
        self._engine.dispose()


class _Checkpointer:
    """Passive WAL checkpoints on one worker thread, with a connection of its own, in rounds
    of two: the bulk beside the writers, then what they committed meanwhile while they wait."""

    def __init__(self, database: str, writers: Callable[[], asyncio.Lock]) -> None:
        self._database = database
        self._writers = writers
        self._writes = 0
        self._executor: ThreadPoolExecutor | None = None
        self._running: asyncio.Task[None] | None = None
        self._conn: sqlite3.Connection | None = None  # used by the worker thread only
        self.done = 0

    def after_write(self) -> None:
        self._writes += 1
        if self._writes < CHECKPOINT_EVERY:
            return
        if self._running is not None and not self._running.done():
            return  # still at it; the next write tries again
        self._writes = 0
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="clarion-wal-checkpoint")
        self._running = asyncio.get_running_loop().create_task(
            self._round(self._executor), name="clarion-wal-checkpoint"
        )

    async def _round(self, executor: ThreadPoolExecutor) -> None:
        loop = asyncio.get_running_loop()
        # The bulk, beside the writers; its figures cannot tell what they committed meanwhile.
        await loop.run_in_executor(executor, self._checkpoint)
        # What they committed meanwhile, while they wait: little to copy, and nothing (no
        # fsync either) when they committed nothing.
        async with self._writers():
            await loop.run_in_executor(executor, self._checkpoint)
        self.done += 1

    def _checkpoint(self) -> None:
        try:
            if self._conn is None:
                self._conn = sqlite3.connect(self._database, timeout=BUSY_TIMEOUT_MS / 1000)
            busy, frames, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:
            log.warning("WAL checkpoint failed; the next one retries", exc_info=True)
            return
        log.debug("WAL checkpoint", extra={"busy": busy, "wal_frames": frames, "copied": copied})

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def settled(self) -> None:
        """Returns once the round in flight, if any, has ended."""
        running = self._running
        if running is not None:
            await asyncio.shield(running)

    def close(self) -> None:
        running, self._running = self._running, None
        if running is not None and not running.done():
            # Its thread's work ends with the executor below; it starts none after that.
            with suppress(RuntimeError):  # its loop is already closed
                running.cancel()
        if self._executor is not None:
            self._executor.submit(self._close_connection)
            self._executor.shutdown(wait=True)
            self._executor = None
