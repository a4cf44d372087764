"""The base of every typed model of the config file, and how a model's validation error
becomes the one-line message `clarion serve` prints before it exits with status 2.

A model's validators raise ValueError with the problem only (`must be a positive number`); the
message names the file and the key path pydantic reports, so a problem is worded once, where it
is checked, and the path is never written by hand. A problem starting with `[]` names a table
(`FILE: [agents.a] must be a table`), one starting with `:` or `.` or `[` is joined to the path
without a space (`FILE: telemetry: unknown key(s) x`). Imports only the pure domain's
duration parser.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from clarion.domain.waiting import Duration, parse_duration

TABLE = "[] must be a table"


class Spec(BaseModel):
    """One table of the file: frozen, checked to be a table, its unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    # How an unknown key is refused; `{keys}` lists them, `{first}` is the first, `{known}` all.
    unknown_says: ClassVar[str | None] = ": unknown key(s) {keys}"
    table_says: ClassVar[str] = TABLE

    @model_validator(mode="before")
    @classmethod
    def _a_table(cls, data: Any) -> Any:
        if isinstance(data, BaseModel):
            return data
        if not isinstance(data, dict):
            raise ValueError(cls.table_says)
        if cls.unknown_says is not None:
            known = sorted(f.alias or name for name, f in cls.model_fields.items())
            unknown = sorted(set(data) - set(known))
            if unknown:
                raise ValueError(
                    cls.unknown_says.format(
                        keys=", ".join(unknown), first=unknown[0], known=", ".join(known)
                    )
                )
        return data

    @classmethod
    def parse(cls, data: Any, where: str) -> Self:
        """`data` as this model, or a ValueError naming `where` (the file) and the key path."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(message(exc, where)) from None


def message(exc: ValidationError, where: str) -> str:
    """The first error of `exc` on one line: `FILE: key.path problem`."""
    error = exc.errors(include_url=False)[0]
    raised = (error.get("ctx") or {}).get("error")
    problem = str(raised) if isinstance(raised, ValueError) else _pydantic_problem(error)
    path = _path(error["loc"])
    if problem.startswith("[]"):
        return f"{where}: [{path}]{problem[2:]}"
    if not path:
        return f"{where}: {problem}"
    joiner = "" if problem[:1] in (":", ".", "[") else " "
    return f"{where}: {path}{joiner}{problem}"


def _path(loc: Iterable[int | str]) -> str:
    # Lists are numbered from 1, as a person counts the `[[tables]]` of a file.
    parts = ""
    for part in loc:
        if isinstance(part, int):
            parts += f"[{part + 1}]"
        else:
            parts += f".{part}" if parts else str(part)
    return parts


def _pydantic_problem(error: Any) -> str:
    # Only a shape no validator here words reaches this (the models check each key's shape).
    return f"is invalid: {error['msg']}"


# ---------------------------------------------------------------- the checks keys share
# Each returns the value typed, or raises ValueError with the problem only.


def positive_number(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError("must be a positive number")
    return float(value)


def non_empty_string(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    return value


def absolute_path(value: Any) -> str:
    if not isinstance(value, str) or not os.path.isabs(value):
        raise ValueError("must be an absolute path")
    return value


def positive_integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("must be a positive integer")
    return value


def duration(value: Any) -> Duration:
    """The file's one duration form (`"30m"`, `"8h"`, `"7d"`)."""
    return parse_duration(value)


def http_url_value(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be an http:// or https:// URL")
    parsed = urlsplit(value)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
    return value


def event_names(known: tuple[str, ...], *, list_known: bool = False) -> Any:
    """A list of the names in `known` (all of them when the key is absent)."""

    def check(value: Any) -> frozenset[str]:
        if not isinstance(value, list) or not all(isinstance(e, str) for e in value):
            raise ValueError("must be a list of event names")
        bad = sorted(set(value) - set(known))
        if bad:
            also = f"; known: {', '.join(known)}" if list_known else ""
            raise ValueError(f": unknown event(s) {', '.join(bad)}{also}")
        return frozenset(value)

    return BeforeValidator(check)


PositiveNumber = Annotated[float, BeforeValidator(positive_number)]
PositiveInteger = Annotated[int, BeforeValidator(positive_integer)]
AbsolutePath = Annotated[str, BeforeValidator(absolute_path)]
NonEmptyString = Annotated[str, BeforeValidator(non_empty_string)]
HttpUrl = Annotated[str, BeforeValidator(http_url_value)]
DurationValue = Annotated[Duration, BeforeValidator(duration)]
