"""Task use cases that are not about sessions: create a task."""

from __future__ import annotations

import logging

from clarion.domain.models import Task
from clarion.domain.wire import task_wire
from clarion.ports import Bus, Event, TurnStore

log = logging.getLogger(__name__)

DEFAULT_WORKSPACE = "default"


class TaskService:
    def __init__(self, store: TurnStore, bus: Bus) -> None:
        self._store = store
        self._bus = bus

    async def create(self, *, title: str, description: str, workspace: str | None) -> Task:
        ws = await self._store.ensure_workspace(workspace or DEFAULT_WORKSPACE)
        task = await self._store.create_task(
            title=title.strip(), description=description, workspace_id=ws.id
        )
        log.info("task created", extra={"task_id": task.id, "workspace": ws.name})
        try:
            await self._bus.publish(
                Event(
                    type="task.created",
                    task_id=task.id,
                    session_id=None,
                    payload={"task": task_wire(task, workspace=ws.name, summary=None)},
                )
            )
        except Exception:
            log.exception("task.created publication failed", extra={"task_id": task.id})
        return task
