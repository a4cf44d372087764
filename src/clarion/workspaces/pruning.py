"""Task worktrees of pruned tasks: a task whose every session a prune deleted (`clarion db
prune`, or the server's retention loop) loses its worktree too. Its branch stays, so its
commits do, and its row reads `removed`.

The row moves to `removed` first (a guarded update: of two pruners, only the one whose update
applied runs git), then git removes the directory. A kill between the two leaves a `removed`
row whose directory is still there, which the server's startup removes; a kill before the
update leaves the task as it was, found again by the next pass. The prune runs without the
server's configuration, so each worktree finds its repository itself: git names the
repository's common directory from inside the worktree.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol

from clarion.domain.models import Task, WorktreeState
from clarion.runtime import failpoints
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
        sessions_ended_before: datetime | None = None,
    ) -> list[Task]: ...

    async def set_worktree_state(
        self,
        task_id: str,
        to: WorktreeState,
        *,
        allowed_from: Sequence[WorktreeState],
        without_sessions: bool = False,
    ) -> Task | None: ...


async def repository_of(worktree: Path) -> Path:
    """The repository a linked worktree belongs to (the parent of its common git directory)."""
    found = await run_git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=worktree)
    return Path(found.text.strip()).parent


async def count_worktrees_pruned_by(store: PrunedWorktreeStore, cutoff: datetime) -> list[str]:
    """The tasks whose worktree a prune at `cutoff` would remove (a dry run's figure): those
    already without sessions and those whose every session the prune would delete."""
    tasks = await store.worktree_tasks(LIVE, sessions_ended_before=cutoff)
    return [task.id for task in tasks]


async def remove_orphaned_worktrees(store: PrunedWorktreeStore) -> list[str]:
    """Remove the worktree of every task left without a session; the ids of those tasks. A
    task whose row an earlier pass moved to `removed` but whose directory a kill left is
    finished too (a cluster has no whole-database startup to do it)."""
    removed: list[str] = []
    git = GitWorktrees()
    for task in await store.worktree_tasks([WorktreeState.REMOVED], without_sessions=True):
        if task.worktree is None:
            continue
        path = Path(task.worktree.path)
        if not await asyncio.to_thread(path.exists):
            continue
        try:
            await remove_directory(git, path)
        except GitError:
            log.exception("prune: worktree still not removed", extra={"task_id": task.id})
            continue
        log.info("prune: leftover worktree removed; branch kept", extra={"task_id": task.id})
        removed.append(task.id)
    for task in await store.worktree_tasks(LIVE, without_sessions=True):
        if task.worktree is None:
            continue
        claimed = await store.set_worktree_state(
            task.id, WorktreeState.REMOVED, allowed_from=LIVE, without_sessions=True
        )
        if claimed is None:
            continue  # another pruner (a replica, or the command) has it, or a session began
        path = Path(task.worktree.path)
        await failpoints.hit("worktree.before_remove")
        try:
            await remove_directory(git, path)
        except GitError:
            # The row says removed; the server's startup removes what is left.
            log.exception("prune: worktree not removed yet", extra={"task_id": task.id})
        else:
            log.info("prune: worktree removed; branch kept", extra={"task_id": task.id})
        removed.append(task.id)
    return removed


async def remove_directory(git: GitWorktrees, path: Path) -> None:
    """Remove a task's worktree through its own repository (nothing when it is gone)."""
    if await asyncio.to_thread(path.is_dir):
        await git.remove(await repository_of(path), path)
