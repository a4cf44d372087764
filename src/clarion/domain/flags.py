"""The truthy rule for metadata flags. Pure; anyone may import it.

A flag is on exactly when its value, cast to text, is `true` or `1`. That is the rule the SQL
store applies (`CAST(COALESCE(value, '') AS TEXT) IN ('true', '1')`), so a row reads the same
in Python, SQLite and PostgreSQL whichever way an older writer encoded the flag:

- on:  JSON `true`, the string `"true"`, the string `"1"`, the integer `1`;
- off: everything else, including `false`, `0`, `2`, `1.0`, `""`, `None`, `"yes"`, `"TRUE"`,
  `" true"` (no trimming, no case folding), lists and objects.

Floats are off even when integral: SQLite renders `1.0` as the text `1.0`, not `1`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TRUE_TEXTS = frozenset({"true", "1"})


def is_truthy(value: object) -> bool:
    """Whether a metadata flag value counts as set (see the module docstring)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value == 1
    if isinstance(value, str):
        return value in _TRUE_TEXTS
    return False


def flag(metadata: Mapping[str, Any] | None, key: str) -> bool:
    """Whether `metadata[key]` is a set flag; a missing key or missing metadata is unset."""
    if not metadata:
        return False
    return is_truthy(metadata.get(key))
