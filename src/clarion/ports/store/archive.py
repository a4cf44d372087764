"""A task's archive, as the archive service guards and records it (ArchiveStore)."""

from __future__ import annotations

from typing import Protocol

from clarion.domain.models import Task, WorkflowStep
from clarion.ports.store.lookups import Lookups


class ArchiveStore(Lookups, Protocol):
    async def claim_archive(self, task_id: str) -> Task:
        """Archive's guard, by the rows, in one transaction: `PendingInput` while a question
        or permission request of the task waits, `SessionBusy` while one of its sessions has
        an open turn (nothing written either way); else its worktree, if any, moves to
        `removed`. The task as stored after."""
        ...

    async def set_task_step(self, task_id: str, step: WorkflowStep) -> Task:
        """TurnStore's: move the task to `step` (archived); NotFound if missing."""
        ...
