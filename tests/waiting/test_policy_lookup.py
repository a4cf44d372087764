"""Which policy a question waits under, and what finding its workspace costs: a task's workspace
is read once (a task never changes workspace, a workspace never changes name), not twice per
question."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clarion.clarification.policies import WaitingPolicies
from clarion.domain.errors import NotFound
from clarion.domain.models import Session, SessionState, Task, WorkflowStep, Workspace
from clarion.domain.waiting import Role, WaitingPolicy, parse_duration

_NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_STRICT = WaitingPolicy(expire_after=parse_duration("2d"))


class CountingLookup:
    """Tasks in workspaces, counting every read (one statement each in the store)."""

    def __init__(self, workspace_of_task: dict[str, str]) -> None:
        self._workspace_of_task = workspace_of_task
        self.reads = 0

    async def get_task(self, task_id: str) -> Task:
        self.reads += 1
        if task_id not in self._workspace_of_task:
            raise NotFound("task not found", task_id=task_id)
        workspace_id = "ws-" + self._workspace_of_task[task_id]
        return Task(task_id, "t", "d", workspace_id, WorkflowStep.IN_PROGRESS, _NOW, _NOW)

    async def get_workspace(self, workspace_id: str) -> Workspace:
        self.reads += 1
        return Workspace(workspace_id, workspace_id.removeprefix("ws-"))


def _session(task_id: str, agent: str = "builtin") -> Session:
    return Session(f"s-{task_id}", task_id, agent, SessionState.RUNNING, True, _NOW, _NOW)


async def test_a_tasks_workspace_is_read_once_for_all_its_questions() -> None:
    lookup = CountingLookup({"t1": "strict", "t2": "default"})
    policies = WaitingPolicies(lookup=lookup, workspaces={"strict": _STRICT})
    for _ in range(3):
        assert await policies.for_session(_session("t1")) == _STRICT
        assert await policies.for_session(_session("t2")) is None
    assert lookup.reads == 4  # task and workspace, once per task


async def test_no_workspace_is_read_when_no_policy_depends_on_it() -> None:
    lookup = CountingLookup({"t1": "strict"})
    profile = WaitingPolicy(remind_after=parse_duration("1h"))
    policies = WaitingPolicies(lookup=lookup, profiles={"builtin": profile})
    assert await policies.for_session(_session("t1")) == profile
    assert lookup.reads == 0


async def test_a_role_resolves_in_each_tasks_own_workspace_after_caching() -> None:
    lookup = CountingLookup({"t1": "alpha", "t2": "beta"})
    profile = WaitingPolicy(escalate_to=(Role("reviewers"),))
    policies = WaitingPolicies(
        lookup=lookup,
        profiles={"builtin": profile},
        roles={"alpha": {"reviewers": ["ann"]}, "beta": {"reviewers": ["bob"]}},
    )
    for _ in range(2):
        alpha = await policies.for_session(_session("t1"))
        beta = await policies.for_session(_session("t2"))
        assert alpha is not None and alpha.escalate_to == ("ann",)
        assert beta is not None and beta.escalate_to == ("bob",)
    assert lookup.reads == 4


async def test_an_unknown_task_is_not_remembered() -> None:
    lookup = CountingLookup({})
    policies = WaitingPolicies(lookup=lookup, workspaces={"strict": _STRICT})
    for _ in range(2):
        with pytest.raises(NotFound):
            await policies.for_session(_session("gone"))
    assert lookup.reads == 2  # asked again each time: nothing was cached for it
