"""Portable SQL pieces: column types and JSON-metadata expressions compiled per dialect.

Imported only inside `clarion.store`. Metadata is JSON stored as TEXT on both databases;
PostgreSQL reads it through `::jsonb`, SQLite through `json_extract`.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Boolean, DateTime, Dialect, Text
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnClause, ColumnElement
from sqlalchemy.sql.expression import literal_column
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in, timezone-aware UTC out, microseconds kept on both databases.

    SQLite stores the naive UTC value as fixed-width text, which sorts like the instant.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use an aware UTC clock")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class JsonText(TypeDecorator[dict[str, Any]]):
    """A JSON object stored as TEXT; None and empty text read as {}."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str:
        return dumps(value or {})

    def process_result_value(self, value: str | None, dialect: Dialect) -> dict[str, Any]:
        if not value:
            return {}
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else {}


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def _key_of(element: FunctionElement[Any]) -> tuple[Any, str]:
    col, key = element.clauses.clauses
    return col, cast(ColumnClause[Any], key).name


class json_text(FunctionElement[str]):
    """`metadata.key` as text, '' when missing or null. JSON true reads '1' on SQLite."""

    type = Text()
    inherit_cache = True
    name = "json_text"


class flag_true(FunctionElement[bool]):
    """The truthy rule for a metadata flag: JSON true, "true", "1" and 1 all count."""

    type = Boolean()
    inherit_cache = True
    name = "flag_true"


class json_with_true(FunctionElement[str]):
    """The JSON text of `column` with `key` set to true, computed by the database."""

    type = Text()
    inherit_cache = True
    name = "json_with_true"


def with_flag(column: ColumnElement[Any], key: str) -> ColumnElement[str]:
    """For set-based updates: no row makes a round trip to Python to gain one flag."""
    return json_with_true(column, _key(key))


def meta_text(column: ColumnElement[Any], key: str) -> ColumnElement[str]:
    return json_text(column, _key(key))


def flag(column: ColumnElement[Any], key: str) -> ColumnElement[bool]:
    return flag_true(column, _key(key))


def _key(key: str) -> ColumnElement[Any]:
    if not _KEY.match(key):
        raise ValueError(f"metadata key {key!r} is not a plain identifier")
    return literal_column(key)


def _sqlite_text(element: FunctionElement[Any], compiler: SQLCompiler, **kw: Any) -> str:
    col, key = _key_of(element)
    return f"COALESCE(CAST(json_extract({compiler.process(col, **kw)}, '$.{key}') AS TEXT), '')"


def _pg_text(element: FunctionElement[Any], compiler: SQLCompiler, **kw: Any) -> str:
    col, key = _key_of(element)
    return f"COALESCE(CAST({compiler.process(col, **kw)} AS JSONB) ->> '{key}', '')"


@compiles(json_text, "sqlite")
def _json_text_sqlite(element: json_text, compiler: SQLCompiler, **kw: Any) -> str:
    return f"({_sqlite_text(element, compiler, **kw)})"


@compiles(json_text, "postgresql")
def _json_text_pg(element: json_text, compiler: SQLCompiler, **kw: Any) -> str:
    return f"({_pg_text(element, compiler, **kw)})"


@compiles(flag_true, "sqlite")
def _flag_sqlite(element: flag_true, compiler: SQLCompiler, **kw: Any) -> str:
    return f"({_sqlite_text(element, compiler, **kw)} IN ('true', '1'))"


@compiles(flag_true, "postgresql")
def _flag_pg(element: flag_true, compiler: SQLCompiler, **kw: Any) -> str:
    return f"({_pg_text(element, compiler, **kw)} IN ('true', '1'))"


@compiles(json_with_true, "sqlite")
def _with_true_sqlite(element: json_with_true, compiler: SQLCompiler, **kw: Any) -> str:
    col, key = _key_of(element)
    return f"json_set({compiler.process(col, **kw)}, '$.{key}', json('true'))"


@compiles(json_with_true, "postgresql")
def _with_true_pg(element: json_with_true, compiler: SQLCompiler, **kw: Any) -> str:
    col, key = _key_of(element)
    target = f"CAST({compiler.process(col, **kw)} AS JSONB)"
    return f"CAST(jsonb_set({target}, '{{{key}}}', 'true'::jsonb) AS TEXT)"
