"""The workflow guard: a task with an active clarification does not move between steps.

Active means a live or detached bundle with a pending row in its session's current turn, the
session not terminal (superseded history and terminal bundles never block). The guard fails
closed: if the repository cannot say whether a clarification is active, nothing moves and the
error propagates (HTTP 500). Imported by the composition root and the API services.
"""

from __future__ import annotations

import logging

from clarion.domain.errors import PendingInput
from clarion.domain.models import Task, WorkflowStep
from clarion.ports import TurnStore

log = logging.getLogger(__name__)


class WorkflowGuard:
    def __init__(self, store: TurnStore) -> None:
        self._store = store

    async def move(self, task_id: str, step: WorkflowStep) -> Task:
        await self._store.get_task(task_id)
        try:
            blocking = await self._store.sessions_with_active_clarification(task_id)
        except Exception:
            log.exception(
                "workflow move refused: active clarifications unreadable",
                extra={"task_id": task_id, "step": str(step)},
            )
            raise
        if blocking:
            log.info(
                "workflow move refused: pending input",
                extra={"task_id": task_id, "session_ids": blocking, "step": str(step)},
            )
            raise PendingInput(
                "task has a pending clarification", task_id=task_id, session_id=blocking[0]
            )
        moved = await self._store.set_task_step(task_id, step)
        log.info("task moved", extra={"task_id": task_id, "step": str(step)})
        return moved
