"""Task use cases that are not about sessions: create a task (with its repository)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from clarion.domain.errors import InvalidInput
from clarion.domain.models import Task
from clarion.domain.wire import task_wire
from clarion.ports import Bus, Event, TurnStore

log = logging.getLogger(__name__)

DEFAULT_WORKSPACE = "default"


class TaskService:
    def __init__(
        self,
        store: TurnStore,
        bus: Bus,
        *,
        repositories: Collection[str] = (),
        workspace_repositories: Mapping[str, str] | None = None,
    ) -> None:
        self._store = store
        self._bus = bus
        self._repositories = frozenset(repositories)
        self._defaults = dict(workspace_repositories or {})

    @property
    def repositories(self) -> frozenset[str]:
        """The repository names a new task may name."""
        return self._repositories

    async def get(self, task_id: str) -> Task:
        """The task; NotFound if missing."""
        return await self._store.get_task(task_id)

    async def create(
        self,
        *,
        title: str,
        description: str,
        workspace: str | None,
        repository: str | None = None,
        workspace_default: bool = True,
    ) -> Task:
        """A new task; without `repository`, the workspace's default one (unless
        `workspace_default` is False: Clarion's own sample task touches no repository)."""
        name = workspace or DEFAULT_WORKSPACE
        if repository is not None and repository not in self._repositories:
            known = ", ".join(sorted(self._repositories)) or "none is configured"
            raise InvalidInput(
                f"unknown repository {repository!r} (known: {known})", field="repository"
            )
        if repository is None and workspace_default:
            repository = self._defaults.get(name)
        ws = await self._store.ensure_workspace(name)
        task = await self._store.create_task(
            title=title.strip(), description=description, workspace_id=ws.id, repository=repository
        )
        log.info(
            "task created",
            extra={"task_id": task.id, "workspace": ws.name, "repository": repository},
        )
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
