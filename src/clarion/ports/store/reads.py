"""Reads and projections' view of the store (ReadStore)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from clarion.domain.models import (
    PendingAction,
    Revision,
    StatusSummary,
    Task,
    Turn,
    Workspace,
)
from clarion.ports.store.lookups import Lookups
from clarion.ports.store.records import (
    DeadlineRecord,
    InboxEntry,
    MessagePage,
    SummaryInputs,
)


class ReadStore(Lookups, Protocol):
    """What clients read: tasks, transcripts, pending projections, summaries and epochs."""

    async def get_workspace(self, workspace_id: str) -> Workspace:
        """The workspace; NotFound if missing."""
        ...

    async def find_deadlines(self, pending_ids: Sequence[str]) -> dict[str, DeadlineRecord]:
        """The waiting-policy rows of these bundles (those that have one), by pending id."""
        ...

    async def list_tasks(self, workspace_ids: Sequence[str] | None = None) -> list[Task]:
        """Tasks oldest first, of these workspaces only (all when None)."""
        ...

    async def list_visible_turns(self, session_id: str) -> list[Turn]:
        """History ascending by started_at, created_at, id; unpublished reservations hidden
        unless a message references them. Private dispatch keys are stripped."""
        ...

    async def list_messages(
        self, session_id: str, *, after: str | None = None, limit: int = 100
    ) -> MessagePage:
        """One page of the transcript, oldest first, after message `after`; `next` is the
        id to pass for the following page, None on the last.
        """
        ...

    async def pending_actions(self, session_ids: Sequence[str]) -> dict[str, PendingAction | None]:
        """Per session: clarification if a current-turn pending row exists, else permission if
        the newest current-turn permission request is pending; None when the session is
        terminal or clean."""
        ...

    async def inbox_entries(
        self, workspace_ids: Sequence[str] | None = None, escalated_to: str | None = None
    ) -> list[InboxEntry]:
        """Oldest first: every bundle with a pending row in its session's current turn and
        every session's newest current-turn permission request while it is pending, of
        non-terminal sessions of these workspaces' tasks (all when None). The same rule as
        `pending_actions`, item by item; whether a bundle is claimable is the caller's call.
        With `escalated_to` (and workspaces), also the pending bundles a waiting policy
        escalated to that user, of any workspace (their sessions' other items stay out)."""
        ...

    async def find_summary(self, task_id: str) -> StatusSummary | None:
        """The stored task summary (a cache), or None when none was written yet."""
        ...

    async def summary_inputs(self, task_id: str) -> SummaryInputs:
        """The task's stored summary, its sessions and their pending actions, from one snapshot
        (the summary read first, see `clarion.projection.summaries`)."""
        ...

    async def cas_summary(
        self, task_id: str, *, expected_revision: int | None, data: Mapping[str, Any]
    ) -> StatusSummary | None:
        """Write `data` with revision expected+1 (1 when expected is None and no row exists).
        Returns the new summary, or None if the stored revision was not `expected_revision`."""
        ...

    async def next_epoch(self) -> int:
        """Allocate the next projection epoch (starts at 1, only grows)."""
        ...

    async def reserve_revision(self) -> Revision:
        """Cluster mode: a pending-projection revision shared by every process on the database,
        the newest stored epoch with the next value of one database sequence, in one statement.
        A reservation that starts after another finished gets a larger revision, whichever
        process made either. PostgreSQL only (raises on SQLite); raises when no epoch was
        allocated yet."""
        ...
