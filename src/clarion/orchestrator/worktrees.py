"""Task worktrees: each task with a repository works in its own git worktree on its own branch.

Creating one is a durable step of the first start of a session's agent: the row is claimed
in state `creating` (committed), then `git worktree add` runs between the fault points
`worktree.before_add` and `worktree.after_add`, then the row moves to `ready`. A kill anywhere
in between leaves `creating`, which the next agent start of the task (or startup) repairs with
the same idempotent git step: the task's branch is reused when it exists, a half-made
directory is made again, and only then is the row `ready`. Every agent of the task runs in
that directory, whatever its profile's `cwd`; the repository's own checkout is never written.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from clarion.domain.errors import Conflict, NotFound
from clarion.domain.models import Session, Task, Worktree, WorktreeState
from clarion.ports.store.worktrees import WorktreeStore
from clarion.ports.workspaces import RepositoryRef, WorktreeGit
from clarion.runtime import failpoints

log = logging.getLogger(__name__)

BRANCH_PREFIX = "clarion/"
LIVE = (WorktreeState.CREATING, WorktreeState.READY)


class WorktreeUnavailable(Exception):
    """The task's worktree could not be made; the message says why, in one sentence."""


def _normal(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


class TaskWorktrees:
    def __init__(
        self,
        *,
        store: WorktreeStore,
        git: WorktreeGit,
        repositories: Mapping[str, RepositoryRef],
        worktrees_dir: Path,
    ) -> None:
        self._store = store
        self._git = git
        self._repositories = dict(repositories)
        self._dir = worktrees_dir
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def repositories(self) -> Mapping[str, RepositoryRef]:
        return self._repositories

    def _lock(self, task_id: str) -> asyncio.Lock:
        lock = self._locks.get(task_id)
        if lock is None:
            lock = self._locks[task_id] = asyncio.Lock()
        return lock

    async def working_directory(self, session: Session) -> str | None:
        """The directory the session's agent runs in: its task's worktree, made or repaired
        now; None for a task without a repository (the profile's `cwd` applies)."""
        task = await self._store.get_task(session.task_id)
        if task.repository is None:
            return None
        async with self._lock(task.id):
            return await self._ensure(await self._store.get_task(task.id))

    async def _ensure(self, task: Task) -> str:
        name = task.repository or ""
        repository = self._repositories.get(name)
        extra = {"task_id": task.id, "repository": name}
        if repository is None:
            raise WorktreeUnavailable(f"the task's repository {name!r} is not configured")
        worktree = task.worktree
        if worktree is None:
            worktree = await self._claim(task, repository)
        if worktree.state is WorktreeState.REMOVED:
            raise WorktreeUnavailable("the task is archived: its worktree was removed")
        path = Path(worktree.path)
        if worktree.state is WorktreeState.READY and await self._git.is_complete(
            repository.path, path, worktree.branch
        ):
            return worktree.path
        log.info(
            "making the task's worktree",
            extra={**extra, "path": worktree.path, "state": str(worktree.state)},
        )
        try:
            await failpoints.hit("worktree.before_add")
            await self._git.materialize(repository.path, path, worktree.branch, worktree.base)
            await failpoints.hit("worktree.after_add")
        except Exception as exc:
            log.exception("worktree could not be made", extra=extra)
            raise WorktreeUnavailable(
                f"the task's worktree could not be made in {worktree.path}: {exc}"
            ) from exc
        if worktree.state is WorktreeState.CREATING:
            await self._store.set_worktree_state(
                task.id, WorktreeState.READY, allowed_from=[WorktreeState.CREATING]
            )
        log.info("worktree ready", extra={**extra, "path": worktree.path})
        return worktree.path

    async def _claim(self, task: Task, repository: RepositoryRef) -> Worktree:
        wanted = Worktree(
            path=str(self._dir / task.id),
            branch=BRANCH_PREFIX + task.id,
            base=repository.base,
            state=WorktreeState.CREATING,
        )
        claimed = await self._store.claim_worktree(task.id, wanted)
        stored = claimed if claimed is not None else await self._store.get_task(task.id)
        if stored.worktree is None:
            raise WorktreeUnavailable("the task's worktree could not be recorded")
        return stored.worktree

    async def remove(self, task_id: str) -> Task:
        """Remove the task's worktree (uncommitted changes with it; its branch stays) and
        record `removed`. The row moves first: from then on no agent of the task starts
        there, and a kill before git finished leaves a `removed` row whose directory startup
        removes. A task already `removed` whose directory is still there loses it now."""
        async with self._lock(task_id):
            task = await self._store.get_task(task_id)
            worktree = task.worktree
            if worktree is None or task.repository is None:
                raise NotFound("the task has no worktree", task_id=task_id)
            repository = self._repositories.get(task.repository)
            if repository is None:
                raise Conflict(
                    f"the task's repository {task.repository!r} is not configured",
                    task_id=task_id,
                )
            if worktree.state is not WorktreeState.REMOVED:
                task = await self._store.set_worktree_state(
                    task_id, WorktreeState.REMOVED, allowed_from=LIVE
                ) or await self._store.get_task(task_id)
            await failpoints.hit("worktree.before_remove")
            await self._git.remove(repository.path, Path(worktree.path))
            log.info("worktree removed; branch kept", extra={"task_id": task_id})
            return task

    async def reconcile(self, session_ids: Sequence[str] | None = None) -> int:
        """At startup: `git worktree prune` in every repository, then every task row still
        `creating`, or `ready` without its worktree in `git worktree list`, is repaired.
        Returns how many were. A repair that fails is logged and left for the next start of
        one of the task's sessions, which fails that session with the reason.

        A whole-database startup (no `session_ids`) first finishes removals a kill cut
        short: a task left without sessions by a prune loses its worktree (never repaired),
        and a `removed` row whose directory git still lists, or that is still on disk, loses
        the directory."""
        listed: dict[str, Mapping[Path, str | None]] = {}
        for name, repository in sorted(self._repositories.items()):
            try:
                await self._git.prune(repository.path)
                listed[name] = {
                    _normal(p): b for p, b in (await self._git.listed(repository.path)).items()
                }
            except Exception:
                log.exception("startup: worktree prune failed", extra={"repository": name})
        await self._finish_removals(listed, session_ids)
        repaired = 0
        for task in await self._store.worktree_tasks(LIVE, session_ids=session_ids):
            worktree = task.worktree
            if worktree is None or task.repository is None:
                continue
            known = listed.get(task.repository, {})
            if (
                worktree.state is WorktreeState.READY
                and known.get(_normal(worktree.path)) == worktree.branch
            ):
                continue
            extra = {"task_id": task.id, "state": str(worktree.state), "path": worktree.path}
            try:
                async with self._lock(task.id):
                    await self._ensure(await self._store.get_task(task.id))
            except Exception:
                log.exception("startup: worktree repair failed", extra=extra)
                continue
            repaired += 1
            log.info("startup: worktree repaired", extra=extra)
        return repaired

    async def _finish_removals(
        self, listed: Mapping[str, Mapping[Path, str | None]], session_ids: Sequence[str] | None
    ) -> None:
        """A scoped start (a replica adopting sessions) finishes only the removals of those
        sessions' tasks (an archive killed midway); the tasks without sessions a prune left
        are the retention loop's, on whichever replica runs it."""
        if session_ids is None:
            for task in await self._store.worktree_tasks(LIVE, without_sessions=True):
                await self._store.set_worktree_state(
                    task.id, WorktreeState.REMOVED, allowed_from=LIVE, without_sessions=True
                )
                log.info("startup: pruned task's worktree to remove", extra={"task_id": task.id})
        removed = [WorktreeState.REMOVED]
        for task in await self._store.worktree_tasks(removed, session_ids=session_ids):
            worktree = task.worktree
            repository = self._repositories.get(task.repository or "")
            if worktree is None or repository is None:
                continue
            path = Path(worktree.path)
            known = _normal(path) in listed.get(repository.name, {})
            if not known and not await asyncio.to_thread(path.exists):
                continue
            try:
                async with self._lock(task.id):
                    await self._git.remove(repository.path, path)
            except Exception:
                log.exception("startup: worktree removal failed", extra={"task_id": task.id})
                continue
            log.info("startup: removed worktree deleted; branch kept", extra={"task_id": task.id})
