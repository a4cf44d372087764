"""What a query sees of its transaction: `execute` and `run_sync`, the same on every database.

Imported by the rest of `clarion.store`; nothing else. Two implementations sit behind the one
shape. `AsyncTx` runs statements through an async driver (asyncpg): every statement is a
network round trip, so the event loop must be free while it waits. `InlineTx` runs them on the
calling thread through the synchronous SQLite driver: a statement on a local file takes tens of
microseconds, far less than handing it to a driver thread and back (aiosqlite does that for
every statement, cursor fetch, BEGIN and COMMIT). The queries are written once, as coroutines,
and cannot tell which one they got. Both run the statements marked hot on the raw driver
connection, inside the same transaction (`clarion.store.db.fastpath`), and everything else
through SQLAlchemy; both give back a `Result`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

from clarion.store.db.fastpath import Plans, SqlitePlan
from clarion.store.db.fastpath_asyncpg import AsyncpgPlan

T = TypeVar("T")
_NO_PARAMETERS: dict[str, Any] = {}


class Result(Protocol):
    """What queries read from a statement's result: SQLAlchemy's `CursorResult`, or the fast
    path's. A row reads by column attribute, by index and by unpacking on both."""

    @property
    def rowcount(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    def first(self) -> Any: ...

    def one(self) -> Any: ...

    def scalar(self) -> Any: ...

    def scalar_one(self) -> Any: ...

    def scalars(self) -> Iterable[Any]: ...


class Tx(Protocol):
    """One open transaction. It ends with the `read()`/`write()` block that produced it."""

    async def execute(self, statement: Executable, parameters: Any = None) -> Result:
        """Run one statement; `parameters` is a mapping, or a list of them for executemany."""
        ...

    async def run_sync(self, fn: Callable[[Connection], T]) -> T:
        """Run `fn` with the underlying synchronous connection (migrations use it)."""
        ...


class AsyncTx:
    __slots__ = ("_conn", "_plans")

    def __init__(self, conn: AsyncConnection, plans: Plans[AsyncpgPlan] | None) -> None:
        self._conn = conn
        self._plans = plans  # None: every statement through SQLAlchemy

    async def execute(self, statement: Executable, parameters: Any = None) -> Result:
        given = _NO_PARAMETERS if parameters is None else parameters
        if self._plans is not None and type(given) is dict:
            plan = self._plans.get(statement, given)
            if plan is not None:
                result = await plan.run(self._conn, given)
                if result is not None:
                    return result
        return await self._conn.execute(statement, parameters)

    async def run_sync(self, fn: Callable[[Connection], T]) -> T:
        return await self._conn.run_sync(fn)


class InlineTx:
    __slots__ = ("_conn", "_plans")

    def __init__(self, conn: Connection, plans: Plans[SqlitePlan]) -> None:
        self._conn = conn
        self._plans = plans

    async def execute(self, statement: Executable, parameters: Any = None) -> Result:
        # A list of mappings is an executemany: SQLAlchemy's.
        given = _NO_PARAMETERS if parameters is None else parameters
        if type(given) is dict:
            plan = self._plans.get(statement, given)
            if plan is not None:
                result = plan.run(self._conn.connection.dbapi_connection, given)  # type: ignore[arg-type]
                if result is not None:
                    return result
        return self._conn.execute(statement, parameters)

    async def run_sync(self, fn: Callable[[Connection], T]) -> T:
        return fn(self._conn)
