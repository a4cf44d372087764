"""A statement and its bound parameters as one literal SQL statement, for a script that `psql
-1 -f` or `sqlite3` runs as it is (the `clarion db upgrade --sql` preview).

Placeholders are found outside quoted text, quoted identifiers, comments and PostgreSQL's
dollar-quoted bodies: `?` (SQLite's drivers), `$N` (asyncpg), `:name` and `%(name)s`.

Imported by `clarion.store.db.schema_status` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

_PLACEHOLDER = re.compile(r"\?|\$(\d+)|%\((\w+)\)s|(?<!:):(\w+)")
_DOLLAR_QUOTE = re.compile(r"\$(\w*)\$")


def literal(value: Any, dialect: str) -> str:
    """`value` as an SQL literal of `dialect` (`postgresql` or `sqlite`)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        if dialect == "postgresql":
            return "TRUE" if value else "FALSE"
        return "1" if value else "0"
    if isinstance(value, int | float | Decimal):
        return repr(value) if not isinstance(value, Decimal) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        hexed = bytes(value).hex()
        return f"'\\x{hexed}'::bytea" if dialect == "postgresql" else f"X'{hexed}'"
    if isinstance(value, datetime):
        text = value.isoformat(sep=" ")
    elif isinstance(value, date | time):
        text = value.isoformat()
    elif isinstance(value, Mapping | list | tuple):
        text = json.dumps(value)
    else:
        text = str(value)
    return "'" + text.replace("'", "''") + "'"


def render(statement: str, parameters: Any, dialect: str) -> list[str]:
    """The statement with its parameters in place, once per parameter set (an executemany
    gives a list of sets)."""
    if not parameters:
        return [statement]
    if isinstance(parameters, list) and parameters and _is_set(parameters[0]):
        return [_bind(statement, one, dialect) for one in parameters]
    return [_bind(statement, parameters, dialect)]


def _is_set(value: Any) -> bool:
    return isinstance(value, Mapping | tuple | list)


def _bind(statement: str, parameters: Sequence[Any] | Mapping[str, Any], dialect: str) -> str:
    out: list[str] = []
    position = 0
    i = 0
    while i < len(statement):
        skipped = _skip_quoted(statement, i)
        if skipped > i:
            out.append(statement[i:skipped])
            i = skipped
            continue
        match = _PLACEHOLDER.match(statement, i)
        if match is None:
            out.append(statement[i])
            i += 1
            continue
        number, pyformat, named = match.groups()
        if isinstance(parameters, Mapping):
            name = pyformat or named
            if name is None or name not in parameters:
                out.append(match.group(0))
                i = match.end()
                continue
            value = parameters[name]
        elif number is not None:
            value = parameters[int(number) - 1]
        elif match.group(0) == "?":
            value = parameters[position]
            position += 1
        else:  # `:word` in a positional statement: a cast such as `::INTEGER`, not a value
            out.append(match.group(0))
            i = match.end()
            continue
        out.append(literal(value, dialect))
        i = match.end()
    return "".join(out)


def _skip_quoted(statement: str, i: int) -> int:
    """The index after the quoted text, identifier or comment starting at `i`; `i` if none."""
    char = statement[i]
    if char in ("'", '"'):
        end = i + 1
        while end < len(statement):
            if statement[end] == char:
                if end + 1 < len(statement) and statement[end + 1] == char:
                    end += 2
                    continue
                return end + 1
            end += 1
        return len(statement)
    if statement.startswith("--", i):
        end = statement.find("\n", i)
        return len(statement) if end < 0 else end
    if statement.startswith("/*", i):
        end = statement.find("*/", i + 2)
        return len(statement) if end < 0 else end + 2
    if char == "$":
        tag = _DOLLAR_QUOTE.match(statement, i)
        if tag is not None and not tag.group(1).isdigit():
            end = statement.find(tag.group(0), tag.end())
            return len(statement) if end < 0 else end + len(tag.group(0))
    return i
