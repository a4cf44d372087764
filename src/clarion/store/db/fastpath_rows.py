"""The fast path's rows and result: what callers read from SQLAlchemy's, nothing more.

Imported only by `clarion.store.db.fastpath`. A row is a named tuple of the statement's result
columns, so it reads like SQLAlchemy's `Row`: by attribute (`row.metadata`), by index, by
unpacking, and it compares equal to the tuple of its values. Values pass through the same
type processors SQLAlchemy would apply (`UtcDateTime`, `JsonText`, booleans), taken from the
dialect once per plan.
"""

from __future__ import annotations

import keyword
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sqlalchemy.exc import MultipleResultsFound, NoResultFound, ResourceClosedError

Processor = Callable[[Any], Any]


class RowShape:
    """A statement's result columns: the row class and which values need processing."""

    __slots__ = ("_convert", "_make")

    def __init__(self, make: Callable[[Any], Any], convert: Sequence[tuple[int, Processor]]):
        self._make = make
        self._convert = tuple(convert)

    @classmethod
    def of(cls, keys: Sequence[str], processors: Sequence[Processor | None]) -> RowShape | None:
        """None when a key could not be an attribute of the row exactly as SQLAlchemy names it
        (a duplicate, a keyword, a leading underscore): SQLAlchemy then runs the statement."""
        valid = all(
            k.isidentifier() and not keyword.iskeyword(k) and not k.startswith("_") for k in keys
        )
        if not valid or len(set(keys)) != len(keys):
            return None
        row = namedtuple("Row", keys)  # type: ignore[misc]
        convert = [(i, p) for i, p in enumerate(processors) if p is not None]
        return cls(row._make, convert)

    def rows(self, raw: list[Any]) -> list[Any]:
        make = self._make
        if not self._convert:
            return [make(values) for values in raw]
        rows = []
        for values in raw:
            out = list(values)
            for index, process in self._convert:
                out[index] = process(out[index])
            rows.append(make(out))
        return rows


class FastResult:
    """The part of SQLAlchemy's `CursorResult` the store uses, over rows already fetched."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any] | None, rowcount: int) -> None:
        self._rows = rows  # None: the statement returns no rows (an UPDATE without RETURNING)
        self.rowcount = rowcount

    def _fetched(self) -> list[Any]:
        if self._rows is None:
            raise ResourceClosedError(
                "This result object does not return rows. It has been closed automatically."
            )
        return self._rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self._fetched())

    def all(self) -> list[Any]:
        return list(self._fetched())

    def first(self) -> Any:
        rows = self._fetched()
        return rows[0] if rows else None

    def one(self) -> Any:
        rows = self._fetched()
        if len(rows) == 1:
            return rows[0]
        if not rows:
            raise NoResultFound("No row was found when one was required")
        raise MultipleResultsFound("Multiple rows were found when exactly one was required")

    def scalar(self) -> Any:
        rows = self._fetched()
        return rows[0][0] if rows else None

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalars(self) -> Iterator[Any]:
        return (row[0] for row in self._fetched())
