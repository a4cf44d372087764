"""One single-mode server per database: a lock held for the server's whole life.

Startup recovery takes every live question of the database for its own orphan (no waiter
survives a restart), so a second server on the same database would detach the first one's
questions while their agents still wait. The guard is a lock the operating system or the
database releases when its holder dies, never a row a crash would leave behind:

- SQLite: an exclusive `flock` on `<database>.server.lock` beside the database file; the file
  names the holder (host, pid).
- PostgreSQL: a session-level advisory lock on a connection of its own, held open for the
  server's life; the holder is named by that connection's `application_name`, which the
  refused server reads from `pg_stat_activity`.

Imported by the composition root only.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

from clarion.store.db.engine import async_url

log = logging.getLogger(__name__)

# pg_advisory_lock takes a bigint; this one is "clarion single server" (fixed for all versions).
PG_LOCK_KEY = 0x434C_5253_494E_474C
APPLICATION_PREFIX = "clarion serve"


class AnotherServer(RuntimeError):
    """Another live server already serves the database in single mode."""

    def __init__(self, holder: str) -> None:
        super().__init__(
            f"another Clarion server ({holder}) already serves this database; "
            "stop it before starting this one"
        )
        self.holder = holder


def _identity() -> str:
    return f"host {socket.gethostname()}, pid {os.getpid()}"


@contextlib.asynccontextmanager
async def single_server(url: str) -> AsyncIterator[None]:
    """Hold the database's single-server lock until exit; AnotherServer if it is taken."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if not database or database == ":memory:" or database.startswith("file:"):
            yield  # a private in-memory database has no other server
            return
        with _sqlite_lock(database):
            yield
        return
    async with _pg_lock(url):
        yield


@contextlib.contextmanager
def _sqlite_lock(database: str) -> Iterator[None]:
    file = Path(database).expanduser()
    path = file.with_name(file.name + ".server.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise AnotherServer(handle.read().strip() or "unknown") from None
        handle.seek(0)
        handle.truncate()
        handle.write(_identity())
        handle.flush()
        log.info("single-server lock held", extra={"lock": str(path)})
        yield
    finally:
        handle.close()  # closing releases the lock, and so does the process dying


@contextlib.asynccontextmanager
async def _pg_lock(url: str) -> AsyncIterator[None]:
    engine = create_async_engine(
        async_url(url),
        poolclass=NullPool,
        connect_args={
            "server_settings": {"application_name": f"{APPLICATION_PREFIX} {_identity()}"[:63]}
        },
    )
    try:
        async with engine.connect() as conn:
            taken = await conn.scalar(
                text("SELECT pg_try_advisory_lock(:key)"), {"key": PG_LOCK_KEY}
            )
            await conn.commit()  # the lock is the session's, not the transaction's
            if not taken:
                raise AnotherServer(await pg_holder(conn))
            log.info("single-server lock held", extra={"lock": "pg_advisory_lock"})
            yield
    finally:
        await engine.dispose()  # the session ends, and with it the lock


_TRY_LOCK = text("SELECT pg_try_advisory_lock(:key)")
_HOLDER = text(
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() "
    "AND ((l.classid::bigint << 32) | l.objid::bigint) = :key LIMIT 1"
)


async def pg_holder(conn: AsyncConnection) -> str:
    name = await conn.scalar(_HOLDER, {"key": PG_LOCK_KEY})
    if isinstance(name, str) and name.startswith(APPLICATION_PREFIX):
        return name[len(APPLICATION_PREFIX) :].strip()
    return "unknown"
