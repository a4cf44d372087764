"""Hot statements run on the raw driver, below SQLAlchemy's per-execution machinery.

Imported only inside `clarion.store`. A live ask -> answer cycle runs about twenty statements,
each already built once at import; SQLAlchemy's own work around each one (execution context,
compiled-cache lookup, parameter processing, result metadata and rows) cost more than the
SQLite driver did, and on PostgreSQL it was half again the asyncpg call it wrapped. A
statement marked with `hot()` is compiled once per dialect and set of parameter names into a
plan: its SQL text, its bind parameters in driver order with their type processors, and its
result columns with theirs. Running a plan is then one driver call and a loop over the rows;
its result (`clarion.store.db.fastpath_rows`) gives exactly what the callers read from
SQLAlchemy's. `SqlitePlan` (here) runs on the sqlite3 connection, `AsyncpgPlan`
(`clarion.store.db.fastpath_asyncpg`) on the asyncpg one; `Plans` holds one dialect's.

The queries stay written once for both databases: a plan is compiled from the same statement
by the same dialect, and whatever a plan cannot do exactly as SQLAlchemy would (a statement
type it does not know, Python-side column defaults, parameters computed by a callable or
rendered as literals, an empty IN list, a missing parameter, an executemany) runs through
SQLAlchemy as before. A store test runs every hot statement both ways, on both databases,
and compares.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeGuard, TypeVar

from sqlalchemy import Delete, Dialect, Insert, Select, Update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.selectable import TextualSelect

from clarion.store.db.fastpath_rows import FastResult, RowShape

S = TypeVar("S", bound=Executable)
P = TypeVar("P", bound="Plan")
Processor = Callable[[Any], Any]

# Statement id -> the statement; holding it keeps the id from being reused by another object.
_HOT: dict[int, Executable] = {}
_MISSING = object()
_NO_PLAN = object()


def hot(statement: S) -> S:
    """Mark a statement built once at import to run on the fast path where there is one."""
    _HOT[id(statement)] = statement
    return statement


def hot_statements() -> tuple[Executable, ...]:
    return tuple(_HOT.values())


class Bind:
    """One bind parameter in driver order: where its value comes from, how it is processed."""

    __slots__ = ("default", "expanding", "key", "name", "process")

    def __init__(
        self, key: str, name: str, default: Any, process: Processor | None, expanding: bool
    ) -> None:
        self.key = key  # the caller's key (`bindparam("session_id")`, a column name)
        self.name = name  # the compiled name, which SQLAlchemy also accepts
        self.default = default  # the value built into the statement, or _MISSING
        self.process = process
        self.expanding = expanding  # an IN list: one placeholder per element


class Plan:
    """One statement compiled for one dialect and one set of parameter names: what binding its
    parameters takes, whichever driver runs it."""

    __slots__ = ("_binds", "_compiled", "_dialect", "_expanding", "_shape", "_sql")

    def __init__(
        self,
        compiled: SQLCompiler,
        binds: Sequence[Bind],
        shape: RowShape | None,
        dialect: Dialect,
    ) -> None:
        self._compiled = compiled
        self._sql = compiled.string
        self._binds = tuple(binds)
        self._expanding = any(b.expanding for b in binds)
        self._shape = shape  # None: the statement returns no rows
        self._dialect = dialect

    def _bound(self, given: Mapping[str, Any]) -> tuple[tuple[int, ...], list[Any]] | None:
        """The processed values in bind order, an IN list's elements in its place, and the
        length of each IN list; None: let SQLAlchemy run it (or raise its own error)."""
        try:
            return self._values(given)
        except Exception:
            # A type refused a value (a naive datetime). Nothing ran yet: SQLAlchemy runs it
            # again and raises the error as its own StatementError, as callers know it.
            return None

    def _values(self, given: Mapping[str, Any]) -> tuple[tuple[int, ...], list[Any]] | None:
        values: list[Any] = []
        sizes: list[int] = []
        for bind in self._binds:
            if bind.key in given:
                value = given[bind.key]
            elif bind.name in given:
                value = given[bind.name]
            elif bind.default is not _MISSING:
                value = bind.default
            else:
                return None  # SQLAlchemy raises its own error for a missing parameter
            process = bind.process
            if bind.expanding:
                items = list(value)
                if not items:
                    return None  # SQLAlchemy renders an empty IN as a never-true subquery
                sizes.append(len(items))
                values.extend(items if process is None else [process(v) for v in items])
            else:
                values.append(value if process is None else process(value))
        return tuple(sizes), values


class SqlitePlan(Plan):
    """A plan run on the sqlite3 connection."""

    __slots__ = ("_sql_by_sizes",)

    def __init__(
        self,
        compiled: SQLCompiler,
        binds: Sequence[Bind],
        shape: RowShape | None,
        dialect: Dialect,
    ) -> None:
        super().__init__(compiled, binds, shape, dialect)
        self._sql_by_sizes: dict[tuple[int, ...], str] = {}

    def run(self, dbapi: sqlite3.Connection, given: Mapping[str, Any]) -> FastResult | None:
        """Execute on `dbapi`, in whatever transaction it is in; None: let SQLAlchemy run it."""
        bound = self._bound(given)
        if bound is None:
            return None
        sizes, values = bound
        sql = self._expanded_sql(sizes) if self._expanding else self._sql
        try:
            cursor = dbapi.execute(sql, values)
            try:
                raw = cursor.fetchall() if self._shape is not None else None
                rowcount = cursor.rowcount
            finally:
                cursor.close()
        except sqlite3.Error as err:
            # The same exception classes SQLAlchemy raises (IntegrityError for a constraint).
            raise DBAPIError.instance(
                sql, values, err, sqlite3.Error, dialect=self._dialect
            ) from err
        if raw is None or self._shape is None:
            return FastResult(None, rowcount)
        return FastResult(self._shape.rows(raw), rowcount)

    def _expanded_sql(self, sizes: tuple[int, ...]) -> str:
        sql = self._sql_by_sizes.get(sizes)
        if sql is None:
            sql = self._sql
            names = [b.name for b in self._binds if b.expanding]
            for name, size in zip(names, sizes, strict=True):
                sql = sql.replace(_placeholder(name), ", ".join("?" * size))
            if len(self._sql_by_sizes) < MAX_IN_SHAPES:
                self._sql_by_sizes[sizes] = sql
        return sql


# IN lists of many lengths: a plan keeps the SQL of this many, the common ones.
MAX_IN_SHAPES = 64


def _placeholder(name: str) -> str:
    return f"__[POSTCOMPILE_{name}]"


class Plans(Generic[P]):
    """The plans of one dialect, each made on its statement's first run."""

    def __init__(self, dialect: Dialect, kind: type[P]) -> None:
        self._dialect = dialect
        self._kind = kind
        self._plans: dict[tuple[int, tuple[str, ...]], Any] = {}

    def get(self, statement: Executable, given: Mapping[str, Any]) -> P | None:
        """The plan for `statement` run with these parameter names, or None: not hot, or not
        something a plan runs exactly as SQLAlchemy would."""
        key = (id(statement), tuple(given))
        plan = self._plans.get(key, _NO_PLAN)
        if plan is _NO_PLAN:
            if _HOT.get(id(statement)) is not statement:
                return None  # never cached: a statement built per call would leak
            plan = compile_plan(statement, self._dialect, given, self._kind)
            self._plans[key] = plan
        return plan  # type: ignore[no-any-return]


# The dialects (and drivers) a plan kind runs on.
_DRIVERS = {("sqlite", "pysqlite"), ("postgresql", "asyncpg")}


def compile_plan(
    statement: Executable, dialect: Dialect, given: Mapping[str, Any], kind: type[P]
) -> P | None:
    """Compile as `Connection.execute` would (an INSERT or UPDATE sets the columns it is given)."""
    if (dialect.name, dialect.driver) not in _DRIVERS:
        return None
    if not isinstance(statement, Select | Insert | Update | Delete | TextualSelect):
        return None  # a TextualSelect: text() with its result columns declared
    if statement.get_execution_options():
        return None
    compiled = statement.compile(dialect=dialect, column_keys=sorted(given))
    if not isinstance(compiled, SQLCompiler) or not compiled.positional:
        return None
    if compiled.insert_prefetch or compiled.update_prefetch or compiled.escaped_bind_names:
        return None  # Python-side defaults run in SQLAlchemy's execution context
    if compiled.implicit_returning:
        return None  # a RETURNING SQLAlchemy added for itself (a generated primary key)
    binds = _binds(compiled)
    if binds is None:
        return None
    shape: RowShape | None = None
    if compiled._result_columns:
        keys = [column.keyname for column in compiled._result_columns]
        processors = [
            column.type._cached_result_processor(dialect, None)
            for column in compiled._result_columns
        ]
        shape = RowShape.of(keys, processors)
        if shape is None:
            return None
    return kind(compiled, binds, shape, dialect)


def _binds(compiled: SQLCompiler) -> list[Bind] | None:
    binds: list[Bind] = []
    for name in compiled.positiontup or ():
        param = compiled.binds[name]
        process = compiled._bind_processors.get(name)
        if param.callable is not None or param.literal_execute or not _single(process):
            return None  # computed or literal values, or a tuple IN (one processor per element)
        if param.expanding and compiled.string.count(_placeholder(name)) != 1:
            return None
        if param.expanding and (param.type._isnull or param.type._is_tuple_type):
            return None  # untyped or tuple IN lists: SQLAlchemy renders them by their values
        default = _MISSING if param.required else param.value
        binds.append(Bind(param.key, name, default, process, param.expanding))
    if not compiled.positiontup and compiled.binds:
        return None
    return binds


def _single(process: object) -> TypeGuard[Processor | None]:
    return process is None or callable(process)
