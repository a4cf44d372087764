"""The built-in agent's `write` and `read` scenarios: a file in its working directory.

`/scenario write path=P text=T` writes T (UTF-8) to P, creating its folders, and replies
`wrote P` (or `write P failed: <reason>`); `/scenario read path=P` replies `read P: <the
first 200 characters>` (or `read P failed: <reason>`). A relative P is relative to the agent's
working directory (a task's worktree, when it has one); P may be absolute. T is the rest of the
prompt after `text=` (spaces and further lines included), so a test can write any text.
"""

from __future__ import annotations

import re
from pathlib import Path

READ_CHARS = 200

_PATH = re.compile(r"(?:^|\s)path=(\S+)")


def _arguments(rest: str) -> tuple[str | None, str]:
    """(P, T): T is everything after `text=`; a `path=` after the text ends it."""
    head, _, text = rest.partition("text=")
    found = _PATH.search(head)
    if found is None:
        found = _PATH.search(text)
        if found is not None:
            text = text[: found.start()]
    return (None if found is None else found.group(1)), text


def _resolve(cwd: str, name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else Path(cwd) / path


def write_reply(cwd: str, rest: str) -> str:
    name, text = _arguments(rest)
    if name is None:
        return "write failed: the scenario needs path=P"
    path = _resolve(cwd, name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return f"write {name} failed: {exc.strerror or exc}"
    return f"wrote {name}"


def read_reply(cwd: str, rest: str) -> str:
    name, _ = _arguments(rest)
    if name is None:
        return "read failed: the scenario needs path=P"
    path = _resolve(cwd, name)
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(READ_CHARS)
    except OSError as exc:
        return f"read {name} failed: {exc.strerror or exc}"
    return f"read {name}: {head}"
