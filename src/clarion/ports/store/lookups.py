"""Reads shared by every consumer of the store: the things a request names."""

from __future__ import annotations

from typing import Protocol

from clarion.domain.models import (
    Bundle,
    Session,
    Task,
)


class Lookups(Protocol):
    """Reads shared by every consumer: the things a request names."""

    async def get_task(self, task_id: str) -> Task:
        """The task; NotFound if missing."""
        ...

    async def get_session(self, session_id: str) -> Session:
        """The session; NotFound if missing."""
        ...

    async def list_sessions(self, task_id: str) -> list[Session]:
        """The task's sessions, oldest first."""
        ...

    async def find_bundle(self, pending_id: str) -> Bundle | None:
        """Every row carrying the pending id, with its session and current turn, from one
        snapshot; None when no row has it.
        """
        ...

    async def sessions_with_active_clarification(self, task_id: str) -> list[str]:
        """Ids of the task's non-terminal sessions with a pending row in their current turn."""
        ...
