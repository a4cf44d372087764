"""`clarion db prune` and task worktrees: a task whose every session the prune deleted loses
its worktree too (its branch stays, so its commits do), and its row reads `removed`.

The prune runs without the server's configuration, so each worktree finds its repository
itself: git names the repository's common directory from inside the worktree.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from clarion.domain.models import Task, WorktreeState
from clarion.workspaces.git import GitError, run_git
from clarion.workspaces.worktrees import GitWorktrees

log = logging.getLogger(__name__)

LIVE = (WorktreeState.CREATING, WorktreeState.READY)


class PrunedWorktreeStore(Protocol):
    async def worktree_tasks(
        self,
        states: Sequence[WorktreeState],
        *,
        session_ids: Sequence[str] | None = None,
        without_sessions: bool = False,
    ) -> list[Task]: ...

    async def set_worktree_state(
        self, task_id: str, to: WorktreeState, *, allowed_from: Sequence[WorktreeState]
    ) -> Task | None: ...


async def repository_of(worktree: Path) -> Path:
    """The repository a linked worktree belongs to (the parent of its common git directory)."""
    found = await run_git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=worktree)
    return Path(found.text.strip()).parent


async def remove_orphaned_worktrees(
    store: PrunedWorktreeStore, *, dry_run: bool = False
) -> list[str]:
    """Remove the worktree of every task left without a session; the ids of those tasks (with
    `dry_run`, of those it would remove, removing nothing)."""
    removed: list[str] = []
    git = GitWorktrees()
    for task in await store.worktree_tasks(LIVE, without_sessions=True):
        if task.worktree is None:
            continue
        if dry_run:
            removed.append(task.id)
            continue
        path = Path(task.worktree.path)
        try:
            if await asyncio.to_thread(path.is_dir):
                await git.remove(await repository_of(path), path)
        except GitError:
            log.exception("prune: worktree not removed", extra={"task_id": task.id})
            continue
        await store.set_worktree_state(task.id, WorktreeState.REMOVED, allowed_from=LIVE)
        log.info("prune: worktree removed; branch kept", extra={"task_id": task.id})
        removed.append(task.id)
    return removed
