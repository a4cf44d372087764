"""The workflow guard: a task with an active clarification does not move between steps."""

from __future__ import annotations

import logging

from clarion.domain.errors import PendingInput
from clarion.domain.models import Task, WorkflowStep
from clarion.ports import Store

log = logging.getLogger(__name__)


class WorkflowGuard:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def move(self, task_id: str, step: WorkflowStep) -> Task:
        await self._store.get_task(task_id)
        # A failing read raises here and the task stays where it is: the guard fails closed.
        blocking = await self._store.sessions_with_active_clarification(task_id)
        if blocking:
            log.info(
                "workflow move refused: pending input",
                extra={"task_id": task_id, "session_ids": blocking},
            )
            raise PendingInput(
                "task has a pending clarification", task_id=task_id, session_id=blocking[0]
            )
        return await self._store.set_task_step(task_id, step)
