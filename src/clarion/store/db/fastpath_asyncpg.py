"""Hot statements on PostgreSQL: run on the asyncpg connection under SQLAlchemy's, as it would.

Imported only inside `clarion.store`. SQLAlchemy runs a statement on asyncpg through its
adaptor, in a greenlet: the execution context, parameter processing, cursor emulation and
result rows around one `PreparedStatement.fetch` cost about half of what the fetch did. An
`AsyncpgPlan` makes the same driver calls the adaptor makes, in the same order, from the
calling coroutine:

- under the adaptor's execute lock, it opens the transaction the adaptor opens lazily at a
  transaction's first statement (`BEGIN` with the connection's isolation level; nothing in
  autocommit), so the adaptor commits or rolls back what the plan ran, as its own;
- the statement is prepared through the adaptor's prepared-statement cache (per connection,
  keyed by the SQL text, and invalidated with the dialect's schema cache), so a statement
  SQLAlchemy already prepared is not prepared again, and the other way round;
- `fetch`, then the row count from the command tag, parsed as the adaptor parses it.

The SQL is the dialect's: for an IN list SQLAlchemy's own expansion gives the text and the
order of the values once per list length. A failure goes through SQLAlchemy's error handling
(`Connection._handle_dbapi_exception`), so callers see the same exception classes, and a lost
connection invalidates the connection and the pool as it would have. The SQLAlchemy internals
used here are pinned with the lock file; the store test comparing both ways covers them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Dialect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import SQLCompiler

from clarion.store.db.fastpath import MAX_IN_SHAPES, Bind, Plan
from clarion.store.db.fastpath_rows import FastResult, RowShape

# The adaptor's parse of a command tag ("UPDATE 1", "INSERT 0 1", "SELECT 3").
_ROWCOUNT = re.compile(r"(?:SELECT|UPDATE|DELETE|INSERT \d+) (\d+)")


class _Slot:
    """Where one driver value comes from: a position in `Plan._values`'s list."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class AsyncpgPlan(Plan):
    """A plan run on the asyncpg connection of an `AsyncConnection`'s transaction."""

    __slots__ = ("_by_sizes",)

    def __init__(
        self,
        compiled: SQLCompiler,
        binds: Sequence[Bind],
        shape: RowShape | None,
        dialect: Dialect,
    ) -> None:
        super().__init__(compiled, binds, shape, dialect)
        # IN list lengths -> (SQL, the values' driver order, or None when it is bind order).
        self._by_sizes: dict[tuple[int, ...], tuple[str, list[int] | None]] = {}

    async def run(self, conn: AsyncConnection, given: Mapping[str, Any]) -> FastResult | None:
        """Execute in `conn`'s transaction; None: let SQLAlchemy run it."""
        sync = conn.sync_connection
        if sync is None or sync.invalidated or sync.closed:
            return None  # SQLAlchemy says what is wrong with the connection, as before
        bound = self._bound(given)
        if bound is None:
            return None
        sizes, values = bound
        sql, order = self._expanded(sizes) if self._expanding else (self._sql, None)
        if order is not None:
            values = [values[i] for i in order]
        adapt = sync.connection.dbapi_connection
        try:
            raw, status = await _fetch(adapt, sql, values, self._dialect)
        except BaseException as error:
            await conn.run_sync(raise_as_sqlalchemy, error, sql, values)
            raise  # not reached: the line above raised SQLAlchemy's exception
        match = _ROWCOUNT.match(status or "")
        rowcount = int(match.group(1)) if match else -1
        if self._shape is None:
            return FastResult(None, rowcount)
        return FastResult(self._shape.rows(raw), rowcount)

    def _expanded(self, sizes: tuple[int, ...]) -> tuple[str, list[int] | None]:
        known = self._by_sizes.get(sizes)
        if known is None:
            known = self._expand(sizes)
            if len(self._by_sizes) < MAX_IN_SHAPES:
                self._by_sizes[sizes] = known
        return known

    def _expand(self, sizes: tuple[int, ...]) -> tuple[str, list[int] | None]:
        """SQLAlchemy's expansion of the IN lists, run on slots that say where each value of
        `Plan._values`'s list went: the dialect numbers the elements after the other values."""
        slots: dict[str, Any] = {}
        position = 0
        lengths = iter(sizes)
        for bind in self._binds:
            if bind.expanding:
                size = next(lengths)
                slots[bind.name] = [_Slot(position + i) for i in range(size)]
                position += size
            else:
                slots[bind.name] = _Slot(position)
                position += 1
        expanded = self._compiled._process_parameters_for_postcompile(slots)
        order = [expanded.parameters[name].index for name in expanded.positiontup or ()]
        if sorted(order) != list(range(position)):
            raise AssertionError(f"an IN list's expansion lost values: {self._sql}")
        return expanded.statement, None if order == list(range(position)) else order


async def _fetch(adapt: Any, sql: str, values: list[Any], dialect: Any) -> tuple[list[Any], str]:
    """What the adaptor's cursor does for one statement (`AsyncAdapt_asyncpg_cursor`)."""
    async with adapt._execute_mutex:
        if adapt._transaction is None:
            await adapt._start_transaction()  # nothing in autocommit
        try:
            prepared, _ = await adapt._prepare(sql, dialect._invalidate_schema_cache_asof)
            rows = await prepared.fetch(*values)
            return rows, prepared.get_statusmsg()
        except Exception as error:
            adapt._handle_exception(error)  # raises it as the adaptor's DBAPI error
            raise


def raise_as_sqlalchemy(sync: Connection, error: BaseException, sql: str, values: Any) -> None:
    """SQLAlchemy's handling of a failed execution, as its own path would have run it: the
    exception wrapped in its class, a disconnect invalidating the connection and the pool."""
    dialect: Any = sync.dialect
    dbapi = dialect.dbapi
    if isinstance(error, dbapi.InvalidCachedStatementError | dbapi.InternalServerError):
        dialect._invalidate_schema_cache()  # what the execution context's handler does
    try:
        raise error
    except BaseException as raised:
        sync._handle_dbapi_exception(raised, sql, tuple(values), None, None)
