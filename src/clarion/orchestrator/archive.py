"""Archiving a task: its worktree is removed (the branch stays), and it leaves the board's
active steps by moving to `done`.

Refused while anything of the task waits (409 `pending_input`: a question or a permission
request) or a turn runs (409 `session_busy`): removing the files under a working agent would
pull its ground away mid-change. The refusal is decided by the rows, in the transaction that
moves the worktree's row to `removed` (store/archive_guard.py), so it is right on whichever
replica serves the request, and a prompt racing the archive either commits first (refused) or
finds the worktree removed. This replica's lanes are looked at first only to refuse a prompt
still being admitted here, before its turn row exists.
"""

from __future__ import annotations

import logging

from clarion.domain.errors import Conflict, SessionBusy
from clarion.domain.models import Task, WorkflowStep, WorktreeState
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.worktrees import TaskWorktrees
from clarion.ports import AgentRuntime
from clarion.ports.store.archive import ArchiveStore

log = logging.getLogger(__name__)

REMOVED = WorktreeState.REMOVED


class TaskArchive:
    def __init__(
        self,
        *,
        store: ArchiveStore,
        worktrees: TaskWorktrees,
        lanes: Lanes,
        runtime: AgentRuntime,
    ) -> None:
        self._runtime = runtime
        self._store = store
        self._worktrees = worktrees
        self._lanes = lanes

    async def archive(self, task_id: str) -> Task:
        task = await self._store.get_task(task_id)
        sessions = [s for s in await self._store.list_sessions(task_id) if not s.state.is_terminal]
        for session in sessions:
            lane = self._lanes.find(session.id)
            if lane is not None and lane.admission.locked():
                raise SessionBusy(
                    "a prompt to a session of the task is being admitted",
                    task_id=task_id,
                    session_id=session.id,
                )
        has_worktree = task.worktree is not None and task.worktree.state is not REMOVED
        if has_worktree and (task.repository or "") not in self._worktrees.repositories:
            raise Conflict(
                f"the task's repository {task.repository!r} is not configured", task_id=task_id
            )
        await self._store.claim_archive(task_id)
        if task.worktree is not None:
            # The task's idle agents run in the worktree: stopped first, they do not outlive
            # their directory (a later prompt to the task is refused: it has no worktree).
            # A worktree already `removed` is removed again if a kill left its directory.
            for session in sessions:
                await self._runtime.stop(session.id)
            if (task.repository or "") in self._worktrees.repositories:
                await self._worktrees.remove(task_id)
        archived = await self._store.set_task_step(task_id, WorkflowStep.DONE)
        log.info("task archived", extra={"task_id": task_id})
        return archived
