"""Task worktree rows, as the worktree service keeps them (WorktreeStore)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from clarion.domain.models import Task, Worktree, WorktreeState
from clarion.ports.store.lookups import Lookups


class WorktreeStore(Lookups, Protocol):
    async def claim_worktree(self, task_id: str, worktree: Worktree) -> Task | None:
        """Record the task's worktree (normally in `creating`) if it has none yet; the task
        as stored, or None when another start already claimed it (nothing written)."""
        ...

    async def set_worktree_state(
        self,
        task_id: str,
        to: WorktreeState,
        *,
        allowed_from: Sequence[WorktreeState],
        without_sessions: bool = False,
    ) -> Task | None:
        """Move the worktree to `to` if its state is in `allowed_from` (and, with
        `without_sessions`, the task has no session: one started since the task was found
        keeps its worktree); the task, or None (nothing written)."""
        ...

    async def worktree_tasks(
        self,
        states: Sequence[WorktreeState],
        *,
        session_ids: Sequence[str] | None = None,
        without_sessions: bool = False,
        sessions_ended_before: datetime | None = None,
    ) -> list[Task]:
        """Tasks whose worktree is in one of `states`, oldest first; with `session_ids`,
        only the tasks of those sessions; with `without_sessions`, only tasks with no session
        left (a prune deleted them all); with `sessions_ended_before`, only tasks a prune at
        that cutoff would leave without sessions (every session ended before it, or none)."""
        ...
