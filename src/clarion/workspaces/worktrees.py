"""Task worktrees on the git program: make one (repairing what a crash left), remove, list.

`materialize` is idempotent, so the same call both creates a worktree and repairs one a kill
interrupted: a worktree git still marks `initializing` (its checkout never finished) or a
directory git does not know as a worktree is removed and made again; the task's branch is
reused whenever it exists, so a repair never makes a second branch and never drops a commit
(commits live in the repository's object store and on the branch, not in the directory).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clarion.workspaces.git import run_git

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ListedWorktree:
    path: Path
    branch: str | None  # the short branch name, None when detached
    initializing: bool  # git's own lock while `worktree add` checks the files out


def parse_porcelain(text: str) -> list[ListedWorktree]:
    """`git worktree list --porcelain` records (blank-line separated `key value` lines)."""
    listed: list[ListedWorktree] = []
    for record in text.strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in record.splitlines():
            key, _, value = line.partition(" ")
            fields[key] = value
        if "worktree" not in fields:
            continue
        branch = fields.get("branch")
        if branch is not None and branch.startswith("refs/heads/"):
            branch = branch[len("refs/heads/") :]
        listed.append(
            ListedWorktree(
                path=Path(fields["worktree"]),
                branch=branch,
                initializing="locked" in fields and "initializing" in fields["locked"],
            )
        )
    return listed


def _normal(path: Path) -> Path:
    return Path(os.path.realpath(path))


class GitWorktrees:
    """Implements `clarion.ports.workspaces.WorktreeGit`."""

    def __init__(self, timeout_s: float = 60.0) -> None:
        self._timeout_s = timeout_s

    async def _entries(self, repository: Path) -> dict[Path, ListedWorktree]:
        result = await run_git(
            ["worktree", "list", "--porcelain"], cwd=repository, timeout_s=self._timeout_s
        )
        return {_normal(w.path): w for w in parse_porcelain(result.text)}

    async def listed(self, repository: Path) -> Mapping[Path, str | None]:
        return {path: w.branch for path, w in (await self._entries(repository)).items()}

    async def prune(self, repository: Path) -> None:
        await run_git(["worktree", "prune"], cwd=repository, timeout_s=self._timeout_s)

    async def is_complete(self, repository: Path, directory: Path, branch: str) -> bool:
        entry = (await self._entries(repository)).get(_normal(directory))
        if entry is None or entry.initializing or entry.branch != branch:
            return False
        head = await run_git(
            ["rev-parse", "--verify", "--quiet", "HEAD"],
            cwd=directory,
            timeout_s=self._timeout_s,
            check=False,
        )
        return head.returncode == 0

    async def materialize(self, repository: Path, directory: Path, branch: str, base: str) -> None:
        extra = {"repository": str(repository), "path": str(directory), "branch": branch}
        await self.prune(repository)
        if await self.is_complete(repository, directory, branch):
            log.info("worktree already complete", extra=extra)
            return
        if _normal(directory) in await self._entries(repository):
            log.warning("half-made worktree removed before it is made again", extra=extra)
            await run_git(
                ["worktree", "remove", "--force", "--force", str(directory)],
                cwd=repository,
                timeout_s=self._timeout_s,
                check=False,
            )
        if await asyncio.to_thread(directory.exists):
            # Not a worktree git knows: a directory a kill left before or during `add`.
            log.warning("stray worktree directory removed", extra=extra)
            await asyncio.to_thread(shutil.rmtree, directory, True)
        await self.prune(repository)
        await asyncio.to_thread(directory.parent.mkdir, parents=True, exist_ok=True)
        exists = await run_git(
            ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            cwd=repository,
            timeout_s=self._timeout_s,
            check=False,
        )
        if exists.returncode == 0:
            args = ["worktree", "add", str(directory), branch]
            log.info("worktree made again on its existing branch", extra=extra)
        else:
            args = ["worktree", "add", "-b", branch, str(directory), base]
        await run_git(args, cwd=repository, timeout_s=self._timeout_s)
        log.info("worktree added", extra={**extra, "base": base})

    async def remove(self, repository: Path, directory: Path) -> None:
        if _normal(directory) in await self._entries(repository):
            await run_git(
                ["worktree", "remove", "--force", "--force", str(directory)],
                cwd=repository,
                timeout_s=self._timeout_s,
            )
        elif await asyncio.to_thread(directory.exists):
            await asyncio.to_thread(shutil.rmtree, directory, True)
        await self.prune(repository)
        log.info("worktree removed", extra={"repository": str(repository), "path": str(directory)})
