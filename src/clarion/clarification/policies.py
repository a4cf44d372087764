"""Which waiting policy a question is asked under: its agent profile's, over its workspace's,
with the roles its `escalate_to` names resolved to the users of the question's workspace.

Reads the task's workspace only when some workspace has a policy or the profile's names a role,
so a server configured without either asks exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    # `[workspaces.NAME.roles]`: by workspace name, role name -> users.
    roles: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)

    async def for_session(self, session: Session) -> WaitingPolicy | None:
        profile = self.profiles.get(session.agent)
        name = ""
        if self.lookup is not None and (
            self.workspaces or (profile is not None and profile.names_roles)
        ):
            task = await self.lookup.get_task(session.task_id)
            name = (await self.lookup.get_workspace(task.workspace_id)).name
        workspace = self.workspaces.get(name)
        policy = workspace if profile is None else profile.over(workspace)
        return None if policy is None else policy.with_roles(self.roles.get(name, {}))
