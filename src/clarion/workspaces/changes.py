"""What a task's worktree changed since it left its base: committed, uncommitted and untracked.

The comparison is the merge base of `base` and the worktree's HEAD against the files on disk, so
the agent's commits, its edits not yet committed and the files it created all show, and a base
that moved on after the branch was made adds nothing of its own. Ignored files stay out.

Nothing is written to the worktree or the repository. Untracked files only show in `git diff` once
the index knows them, so the worktree's index is copied to a temporary file and the untracked
files are recorded there as intent-to-add (`git add -N`), by name: `git ls-files --others` lists
them without looking at the tracked files, so the worktree's tracked files are walked once, by
the diff, not twice (a walk of a 10,000-file worktree is about 20 ms of CPU). That records the
empty blob, so git runs with a temporary object directory that borrows the repository's objects
as an alternate: whatever git stores lands in the scratch folder and is thrown away with it. The
real index is never touched, so the agent's next `git add` or `git commit` sees exactly what it
left.

A binary file is flagged with `binary: true`, zero counts and an empty patch (`""`, never null, so
`patch` is always a string).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clarion.workspaces.diff_output import (
    LineCounts,
    RawEntry,
    cut_patch,
    parse_raw_and_numstat,
    patch_header,
    split_listing,
    split_patches,
)
from clarion.workspaces.git import GitError, GitResult, run_git

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
    # Three independent reads at once: where things are, the merge base, the untracked files.
    located, merged, listed = await asyncio.gather(
        _locate(worktree, base),
        run_git(["merge-base", f"{base}^{{commit}}", "HEAD"], cwd=worktree),
        # Only the untracked files: no walk of the tracked ones (the diff below does that).
        run_git(
            ["ls-files", "--others", "--exclude-standard", "-z", "--full-name", ":/"],
            cwd=worktree,
            env={"GIT_OPTIONAL_LOCKS": "0"},
        ),
        return_exceptions=True,
    )
    for outcome in (located, merged, listed):  # the first one's error names the cause best
        if isinstance(outcome, BaseException):
            raise outcome
    assert isinstance(located, _Location)
    assert isinstance(merged, GitResult) and isinstance(listed, GitResult)
    where, merge_base, untracked = located, merged.text.strip(), listed.stdout
    with tempfile.TemporaryDirectory(prefix="clarion-changes-") as scratch:
        temp_index = Path(scratch) / "index"
        temp_objects = Path(scratch) / "objects"
        temp_objects.mkdir()
        if await asyncio.to_thread(where.index.exists):
            # With its modification time: git trusts an entry whose file looks unchanged only
            # if the file is older than the index, so a copy stamped now would hide an edit of
            # the same size made in the second the agent's own git call wrote the index.
            await asyncio.to_thread(shutil.copy2, where.index, temp_index)
        env = {
            "GIT_INDEX_FILE": str(temp_index),
            "GIT_OBJECT_DIRECTORY": str(temp_objects),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(where.objects),
            "GIT_OPTIONAL_LOCKS": "0",
        }
        if untracked:
            # Exactly the files listed, named literally (no glob in a name is expanded): no
            # second walk of the whole worktree.
            await run_git(
                [
                    "--literal-pathspecs", "add", "--intent-to-add",
                    "--pathspec-from-file=-", "--pathspec-file-nul",
                ],
                cwd=where.top,
                env=env,
                stdin=untracked,
            )  # fmt: skip
        # One walk of the worktree for the list, the counts and the patches.
        diff = await run_git(
            [
                *_DIFF_CONFIG,
                "diff",
                *_DIFF_FLAGS,
                "-z",
                "--raw",
                "--numstat",
                "--patch",
                merge_base,
            ],
            cwd=worktree,
            env=env,
        )
    listing, patches = split_listing(diff.stdout)
    entries, counts = parse_raw_and_numstat(listing)
    files = _files(entries, counts, split_patches(patches), max_patch_bytes)
    log.debug(
        "worktree changes read",
        extra={"worktree": str(worktree), "merge_base": merge_base, "files": len(files)},
    )
    return WorktreeChanges(base, where.branch, merge_base, where.head, files)


@dataclass(frozen=True, slots=True)
class _Location:
    head: str
    base_commit: str
    branch: str | None
    index: Path
    objects: Path
    top: Path


async def _locate(worktree: Path, base: str) -> _Location:
    """HEAD, the base's commit, the branch checked out, the worktree's index and the object
    directory, from one `git rev-parse` (each git process costs a few milliseconds)."""
    result = await run_git(
        [
            "rev-parse", "HEAD", f"{base}^{{commit}}", "--abbrev-ref", "HEAD",
            "--path-format=absolute", "--git-path", "index", "--git-path", "objects",
            "--show-toplevel", "--",
        ],
        cwd=worktree,
    )  # fmt: skip
    head, base_commit, branch, index, objects, top = result.text.splitlines()[:6]
    # A detached HEAD abbreviates to "HEAD", a name git never gives a branch.
    return _Location(
        head,
        base_commit,
        None if branch == "HEAD" else branch,
        Path(index),
        Path(objects),
        Path(top),
    )


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
