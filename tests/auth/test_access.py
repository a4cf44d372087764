"""AccessControl on a fake store: what it asks the store, what it caches, what it refuses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from clarion.domain.errors import NotFound, Unauthenticated
from clarion.domain.models import Session, SessionState, Task, WorkflowStep, Workspace
from clarion.orchestrator.access import EVERYONE, AccessControl, Caller, hash_token
from clarion.ports import AccessStore, TokenOwner

NOW = datetime(2026, 3, 1, tzinfo=UTC)
ALPHA, BETA = Workspace("w-alpha", "alpha"), Workspace("w-beta", "beta")


class FakeStore:
    """Only what AccessControl may use; counts every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.tasks = {
            "t-alpha": Task("t-alpha", "a", "", ALPHA.id, WorkflowStep.BACKLOG, NOW, NOW),
        }
        self.sessions = {
            "s-alpha": Session("s-alpha", "t-alpha", "builtin", SessionState.IDLE, True, NOW, NOW)
        }

    async def find_token_owner(self, token_hash: str) -> TokenOwner | None:
        self.calls.append("find_token_owner")
        if token_hash == hash_token("alice-token"):
            return TokenOwner("u1", "alice", (ALPHA,))
        return None

    async def get_task(self, task_id: str) -> Task:
        self.calls.append("get_task")
        if task_id not in self.tasks:
            raise NotFound("task not found", task_id=task_id)
        return self.tasks[task_id]

    async def get_session(self, session_id: str) -> Session:
        self.calls.append("get_session")
        if session_id not in self.sessions:
            raise NotFound("session not found", session_id=session_id)
        return self.sessions[session_id]

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"AccessControl must not call AccessStore.{name}")


def access(store: FakeStore, *, enabled: bool = True) -> AccessControl:
    fake: Any = store
    typed: AccessStore = fake
    return AccessControl(typed, enabled=enabled)


async def test_access_control_off_lets_everyone_in_without_touching_the_store() -> None:
    store = FakeStore()
    control = access(store, enabled=False)
    assert await control.authenticate(None) is EVERYONE
    assert await control.authenticate("anything") is EVERYONE
    await control.require_task(EVERYONE, "t-missing")
    await control.require_session(EVERYONE, "s-missing")
    await control.require_bundle(EVERYONE, "p-missing")
    assert await control.sees_task(EVERYONE, "t-missing")
    assert store.calls == []


async def test_missing_and_unknown_tokens_are_unauthenticated() -> None:
    control = access(FakeStore())
    for token in (None, "", "wrong", "x" * 10_000):
        with pytest.raises(Unauthenticated):
            await control.authenticate(token)
    alice = await control.authenticate("alice-token")
    assert alice.user == "alice" and alice.workspace_ids() == [ALPHA.id]


async def test_invisible_is_the_same_not_found_as_missing_and_lookups_are_cached() -> None:
    store = FakeStore()
    control = access(store)
    bob = Caller(user="bob", workspaces=(BETA,))
    alice = await control.authenticate("alice-token")
    store.calls.clear()

    await control.require_task(alice, "t-alpha")
    await control.require_session(alice, "s-alpha")
    await control.require_task(alice, "t-alpha")
    await control.require_session(alice, "s-alpha")
    assert store.calls == ["get_task", "get_session"]  # each looked up once

    for check, ident in ((control.require_task, "t-"), (control.require_session, "s-")):
        with pytest.raises(NotFound) as invisible:
            await check(bob, ident + "alpha")
        with pytest.raises(NotFound) as missing:
            await check(bob, ident + "missing")
        assert invisible.value.message == missing.value.message
    assert not await control.sees_task(bob, "t-alpha")
    assert not await control.sees_task(alice, "t-missing")


def test_new_tasks_go_to_the_first_workspace_or_a_named_one_the_caller_is_in() -> None:
    control = access(FakeStore())
    carol = Caller(user="carol", workspaces=(BETA, ALPHA))
    assert control.workspace_for_new_task(carol, None) == "beta"
    assert control.workspace_for_new_task(carol, "alpha") == "alpha"
    with pytest.raises(NotFound):
        control.workspace_for_new_task(carol, "gamma")
    assert control.workspace_for_new_task(EVERYONE, None) is None
