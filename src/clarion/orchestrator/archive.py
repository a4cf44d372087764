"""Archiving a task: its worktree is removed (the branch stays), and it leaves the board's
active steps by moving to `done`.

Refused while anything of the task waits (409 `pending_input`: a question or a permission
request) or a turn runs (409 `session_busy`): removing the files under a working agent would
pull its ground away mid-change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from clarion.domain.errors import PendingInput, SessionBusy
from clarion.domain.models import Task, WorkflowStep, WorktreeState
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.worktrees import TaskWorktrees
from clarion.ports import AgentRuntime, TurnStore

log = logging.getLogger(__name__)


class TaskArchive:
    def __init__(
        self,
        *,
        store: TurnStore,
        worktrees: TaskWorktrees,
        lanes: Lanes,
        runtime: AgentRuntime,
        permission_pending: Callable[[str], bool],
    ) -> None:
        self._runtime = runtime
        self._store = store
        self._worktrees = worktrees
        self._lanes = lanes
        self._permission_pending = permission_pending

    async def archive(self, task_id: str) -> Task:
        task = await self._store.get_task(task_id)
        sessions = [s for s in await self._store.list_sessions(task_id) if not s.state.is_terminal]
        waiting = await self._store.sessions_with_active_clarification(task_id)
        waiting += [s.id for s in sessions if self._permission_pending(s.id)]
        if waiting:
            raise PendingInput(
                "the task has a question or permission request waiting",
                task_id=task_id,
                session_id=waiting[0],
            )
        for session in sessions:
            lane = self._lanes.get(session.id)
            if lane.admission.locked() or lane.running_generation is not None or lane.queue:
                raise SessionBusy(
                    "a session of the task has a turn running",
                    task_id=task_id,
                    session_id=session.id,
                )
        if task.worktree is not None and task.worktree.state is not WorktreeState.REMOVED:
            # The task's idle agents run in the worktree: stopped first, they do not outlive
            # their directory (a later prompt to the task is refused: it has no worktree).
            for session in sessions:
                await self._runtime.stop(session.id)
            await self._worktrees.remove(task_id)
        archived = await self._store.set_task_step(task_id, WorkflowStep.DONE)
        log.info("task archived", extra={"task_id": task_id})
        return archived
