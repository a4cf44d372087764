"""Which waiting policy a question is asked under: its agent profile's, over its workspace's,
with the roles its `escalate_to` names resolved to the users of the question's workspace.

Reads the task's workspace only when some workspace has a policy or the profile's names a role,
so a server configured without either asks exactly as before; and then once per task, not per
question: a task never moves to another workspace and a workspace is never renamed, so the name
read for a task's first question holds for all its later ones.
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
    # Task id -> its workspace's name, as read for the task's first question.
    _workspace_names: dict[str, str] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    async def for_session(self, session: Session) -> WaitingPolicy | None:
        profile = self.profiles.get(session.agent)
        name = ""
        if self.lookup is not None and (
            self.workspaces or (profile is not None and profile.names_roles)
        ):
            name = await self._workspace_name(self.lookup, session.task_id)
        workspace = self.workspaces.get(name)
        policy = workspace if profile is None else profile.over(workspace)
        return None if policy is None else policy.with_roles(self.roles.get(name, {}))

    async def _workspace_name(self, lookup: WorkspaceLookup, task_id: str) -> str:
        name = self._workspace_names.get(task_id)
        if name is None:
            task = await lookup.get_task(task_id)
            name = (await lookup.get_workspace(task.workspace_id)).name
            if len(self._workspace_names) >= _MAX_REMEMBERED:
                self._workspace_names.clear()  # start over rather than grow without bound
            self._workspace_names[task_id] = name
        return name


_MAX_REMEMBERED = 100_000  # task ids and names: a few MB at most
