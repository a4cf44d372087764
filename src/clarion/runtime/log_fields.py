"""Fields every log record of this process carries once they are known (in cluster mode, the
replica's id), for log formats that show them as fields.

Kept apart from `logging`'s records: a record factory that added them would collide with the
many call sites that pass `extra={"replica": ...}` themselves.
"""

from __future__ import annotations

from collections.abc import Mapping

_fields: dict[str, str] = {}


def stamp(**fields: str) -> None:
    """From now on every log line of this process names these fields (a call site's own value
    of the same field wins)."""
    _fields.update(fields)


def unstamp(*names: str) -> None:
    for name in names:
        _fields.pop(name, None)


def process_fields() -> Mapping[str, str]:
    return _fields
