"""Which waiting policy a question is asked under: its agent profile's, over its workspace's.

Reads the task's workspace only when some workspace has a policy, so a server configured
without workspace policies asks exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from clarion.domain.models import Session, Task, Workspace
from clarion.domain.waiting import WaitingPolicy


class WorkspaceLookup(Protocol):
    async def get_task(self, task_id: str) -> Task: ...

    async def get_workspace(self, workspace_id: str) -> Workspace: ...


@dataclass(frozen=True, slots=True)
class WaitingPolicies:
    lookup: WorkspaceLookup | None = None
    # `[agents.NAME.waiting]` by profile name, `[workspaces.NAME.waiting]` by workspace name.
    profiles: Mapping[str, WaitingPolicy] = field(default_factory=dict)
    workspaces: Mapping[str, WaitingPolicy] = field(default_factory=dict)

    async def for_session(self, session: Session) -> WaitingPolicy | None:
        profile = self.profiles.get(session.agent)
        workspace: WaitingPolicy | None = None
        if self.workspaces and self.lookup is not None:
            task = await self.lookup.get_task(session.task_id)
            name = (await self.lookup.get_workspace(task.workspace_id)).name
            workspace = self.workspaces.get(name)
        if profile is None:
            return workspace
        return profile.over(workspace)
