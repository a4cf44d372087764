"""A person's review of a task's changes: its comments, the prompt it becomes, and which paths
a comment may name (only files inside the task's worktree)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from clarion.domain.errors import InvalidInput

REVIEW_HEADING = "Review of your changes:"


def review_claim_key(turn_id: str) -> str:
    """The claim key a review's reserved turn carries where a successor carries its bundle's
    pending id (and its only claimed "message id"): no message has it, so publishing and
    startup reconciliation settle no rows."""
    return f"review:{turn_id}"


@dataclass(frozen=True, slots=True)
class ReviewComment:
    path: str  # relative to the worktree, normalized
    line: int | None
    body: str


def worktree_relative(path: str, worktree: str, *, field: str) -> str:
    """`path` as a normalized path relative to `worktree`; InvalidInput naming `field` when it
    is empty or leaves the worktree (`../`, or an absolute path outside it)."""
    raw = path.strip()
    if not raw or "\x00" in raw:
        raise InvalidInput("a comment needs the path of a file in the worktree", field=field)
    root = posixpath.normpath(worktree)
    joined = posixpath.normpath(raw if posixpath.isabs(raw) else posixpath.join(root, raw))
    if joined == root or not joined.startswith(root.rstrip("/") + "/"):
        raise InvalidInput(
            f"the path {path!r} is not a file inside the task's worktree", field=field
        )
    return posixpath.relpath(joined, root)


def review_prompt(comments: Sequence[ReviewComment], summary: str | None) -> str:
    """`Review of your changes:`, one line per comment (`path:line: body` or `path: body`),
    then the summary."""
    lines = [REVIEW_HEADING]
    for comment in comments:
        where = comment.path if comment.line is None else f"{comment.path}:{comment.line}"
        lines.append(f"{where}: {' '.join(comment.body.split())}")
    if summary is not None and summary.strip():
        lines.append(summary.strip())
    return "\n".join(lines)
