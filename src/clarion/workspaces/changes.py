"""What a task's worktree changed since it left its base: committed, uncommitted and untracked.

The comparison is the merge base of `base` and the worktree's HEAD against the files on disk, so
the agent's commits, its edits not yet committed and the files it created all show, and a base
that moved on after the branch was made adds nothing of its own. Ignored files stay out.

Nothing is written to the worktree or the repository. Untracked files only show in `git diff` once
the index knows them, so the worktree's index is copied to a temporary file and the untracked
files are recorded there as intent-to-add (`git add -N`). That records the empty blob, so git runs
with a temporary object directory that borrows the repository's objects as an alternate: whatever
git stores lands in the scratch folder and is thrown away with it. The real index is never
touched, so the agent's next `git add` or `git commit` sees exactly what it left.

A binary file is flagged with `binary: true`, zero counts and an empty patch (`""`, never null, so
`patch` is always a string).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clarion.workspaces.diff_output import (
    LineCounts,
    RawEntry,
    cut_patch,
    parse_raw_and_numstat,
    patch_header,
    split_patches,
)
from clarion.workspaces.git import GitError, run_git

log = logging.getLogger(__name__)

DEFAULT_MAX_PATCH_BYTES = 256 * 1024

# Settings a person's git configuration could set that would change what we parse: no external
# diff or text conversion, the standard a/ b/ prefixes, names unquoted, no colour.
_DIFF_CONFIG = (
    "-c", "core.quotepath=false",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.relative=false",
    "-c", "color.ui=false",
)  # fmt: skip
_DIFF_FLAGS = ("--no-ext-diff", "--no-textconv", "--no-color", "--find-renames", "--no-relative")


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    old_path: str | None
    status: str
    additions: int
    deletions: int
    binary: bool
    patch: str
    truncated: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "path": self.path,
            "old_path": self.old_path,
            "status": self.status,
            "additions": self.additions,
            "deletions": self.deletions,
            "binary": self.binary,
            "patch": self.patch,
        }
        if self.truncated:
            wire["truncated"] = True
        return wire


@dataclass(frozen=True, slots=True)
class WorktreeChanges:
    base: str
    branch: str | None
    merge_base: str
    head: str
    files: tuple[FileChange, ...]

    @property
    def total_additions(self) -> int:
        return sum(f.additions for f in self.files)

    @property
    def total_deletions(self) -> int:
        return sum(f.deletions for f in self.files)

    def to_wire(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "branch": self.branch,
            "merge_base": self.merge_base,
            "head": self.head,
            "files": [f.to_wire() for f in self.files],
            "total_additions": self.total_additions,
            "total_deletions": self.total_deletions,
        }


async def read_changes(
    worktree: Path, base: str, *, max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES
) -> WorktreeChanges:
    """Everything in `worktree` that differs from the merge base of `base` and its HEAD.

    Raises `GitError` when `worktree` is not a git worktree, `base` does not exist, or git fails.
    """
    if max_patch_bytes < 1:
        raise ValueError("max_patch_bytes must be at least 1")
    if not base or base.startswith("-"):
        raise GitError(f"not a branch name: {base!r}", args=("merge-base", base))
    head, branch, merge_base, (index_path, objects) = await _all(
        _rev(worktree, "HEAD"),
        _current_branch(worktree),
        _merge_base(worktree, base),
        _index_and_objects(worktree),
    )
    with tempfile.TemporaryDirectory(prefix="clarion-changes-") as scratch:
        temp_index = Path(scratch) / "index"
        temp_objects = Path(scratch) / "objects"
        temp_objects.mkdir()
        if index_path.exists():
            await asyncio.to_thread(shutil.copyfile, index_path, temp_index)
        env = {
            "GIT_INDEX_FILE": str(temp_index),
            "GIT_OBJECT_DIRECTORY": str(temp_objects),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects),
            "GIT_OPTIONAL_LOCKS": "0",
        }
        # From the top of the worktree, so every untracked file is named whatever `worktree` is.
        await run_git(["add", "--intent-to-add", "--", ":/"], cwd=worktree, env=env)
        listing, patches = await _all(
            run_git(
                [*_DIFF_CONFIG, "diff", *_DIFF_FLAGS, "-z", "--raw", "--numstat", merge_base],
                cwd=worktree,
                env=env,
            ),
            run_git(
                [*_DIFF_CONFIG, "diff", *_DIFF_FLAGS, "--patch", merge_base],
                cwd=worktree,
                env=env,
            ),
        )
    entries, counts = parse_raw_and_numstat(listing.stdout)
    files = _files(entries, counts, split_patches(patches.stdout), max_patch_bytes)
    log.debug(
        "worktree changes read",
        extra={"worktree": str(worktree), "merge_base": merge_base, "files": len(files)},
    )
    return WorktreeChanges(base, branch, merge_base, head, files)


async def _all(*calls: Awaitable[Any]) -> list[Any]:
    """Run the git calls at once; on a failure, raise it only after every call has finished.

    Plain `gather` would return at the first error and leave the other git processes running
    unobserved; each call is bounded in time, so waiting for them all is short.
    """
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _files(
    entries: list[RawEntry],
    counts: dict[str, LineCounts],
    patches: list[bytes],
    max_patch_bytes: int,
) -> tuple[FileChange, ...]:
    by_header = {p.split(b"\n", 1)[0]: p for p in patches}
    in_order = len(patches) == len(entries)
    files = []
    for position, entry in enumerate(entries):
        count = counts.get(entry.path, LineCounts(0, 0, False))
        patch_bytes = by_header.get(patch_header(entry))
        if patch_bytes is None:
            # A name git quotes in the header (a tab, a newline, a quote): git prints patches in
            # the same order as the listing, so the position finds it.
            patch_bytes = patches[position] if in_order else b""
        if count.binary:
            patch, truncated = "", False
        else:
            patch, truncated = cut_patch(patch_bytes, max_patch_bytes)
        files.append(
            FileChange(
                path=entry.path,
                old_path=entry.old_path,
                status=entry.status,
                additions=count.additions,
                deletions=count.deletions,
                binary=count.binary,
                patch=patch,
                truncated=truncated,
            )
        )
    return tuple(files)


async def _rev(worktree: Path, rev: str) -> str:
    result = await run_git(["rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=worktree)
    return result.text.strip()


async def _current_branch(worktree: Path) -> str | None:
    result = await run_git(["symbolic-ref", "--short", "-q", "HEAD"], cwd=worktree, check=False)
    name = result.text.strip()
    return name if result.returncode == 0 and name else None


async def _merge_base(worktree: Path, base: str) -> str:
    base_commit = await _rev(worktree, base)
    result = await run_git(["merge-base", base_commit, "HEAD"], cwd=worktree)
    return result.text.strip()


async def _index_and_objects(worktree: Path) -> tuple[Path, Path]:
    # A linked worktree keeps its index under the repository's .git/worktrees/<name>/ and shares
    # the repository's object directory.
    result = await run_git(
        ["rev-parse", "--path-format=absolute", "--git-path", "index", "--git-path", "objects"],
        cwd=worktree,
    )
    index, objects = result.text.splitlines()[:2]
    return Path(index), Path(objects)
