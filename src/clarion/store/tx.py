"""What a query sees of its transaction: `execute` and `run_sync`, the same on every database.

Imported by the rest of `clarion.store`; nothing else. Two implementations sit behind the one
shape. `AsyncTx` runs statements through an async driver (asyncpg): every statement is a
network round trip, so the event loop must be free while it waits. `InlineTx` runs them on the
calling thread through the synchronous SQLite driver: a statement on a local file takes tens of
microseconds, far less than handing it to a driver thread and back (aiosqlite does that for
every statement, cursor fetch, BEGIN and COMMIT). The queries are written once, as coroutines,
and cannot tell which one they got.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable
from sqlalchemy.util.typing import TupleAny

T = TypeVar("T")
Rows = CursorResult[*TupleAny]


class Tx(Protocol):
    """One open transaction. It ends with the `read()`/`write()` block that produced it."""

    async def execute(self, statement: Executable, parameters: Any = None) -> Rows:
        """Run one statement; `parameters` is a mapping, or a list of them for executemany."""
        ...

    async def run_sync(self, fn: Callable[[Connection], T]) -> T:
        """Run `fn` with the underlying synchronous connection (migrations use it)."""
        ...


class AsyncTx:
    __slots__ = ("_conn",)

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def execute(self, statement: Executable, parameters: Any = None) -> Rows:
        return await self._conn.execute(statement, parameters)

    async def run_sync(self, fn: Callable[[Connection], T]) -> T:
        return await self._conn.run_sync(fn)


class InlineTx:
    __slots__ = ("_conn",)

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def execute(self, statement: Executable, parameters: Any = None) -> Rows:
        return self._conn.execute(statement, parameters)

    async def run_sync(self, fn: Callable[[Connection], T]) -> T:
        return fn(self._conn)
