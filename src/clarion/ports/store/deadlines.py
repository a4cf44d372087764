"""The waiting policy's view of the store (DeadlineStore): the deadline scheduler's reads and
guarded writes, and the bundle reads' look at a question's deadlines."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from clarion.ports.store.records import DeadlineRecord


class DeadlineStore(Protocol):
    """Every write is a guarded update: False means it did not apply (another fired it, or
    the row moved on), never an exception."""

    async def next_deadline_due(self, owner: str | None) -> datetime | None:
        """The earliest time a deadline of `owner`'s sessions (every session with None) is
        due, or None when none is left."""
        ...

    async def due_deadlines(
        self, owner: str | None, now: datetime, limit: int = 50
    ) -> list[DeadlineRecord]:
        """`owner`'s deadline rows with something due at `now`, earliest first."""
        ...

    async def find_deadlines(self, pending_ids: Sequence[str]) -> dict[str, DeadlineRecord]:
        """The deadline rows of these bundles (those that have one), by pending id."""
        ...

    async def record_reminder(
        self,
        record: DeadlineRecord,
        next_remind_at: datetime | None,
        questions: Sequence[dict[str, Any]],
    ) -> bool:
        """Move the due reminder on to `next_remind_at` (only while it is still the one in
        `record`) and queue `clarification.reminder` in the same commit."""
        ...

    async def record_escalation(
        self, record: DeadlineRecord, questions: Sequence[dict[str, Any]]
    ) -> bool:
        """Mark the question escalated (once) and queue `clarification.escalated`."""
        ...

    async def retire_deadlines(self, pending_id: str) -> bool:
        """Nothing more fires for this question (it no longer waits)."""
        ...

    async def postpone_deadlines(self, pending_id: str, until: datetime) -> bool:
        """Nothing fires for this question before `until` (it is looked at again then)."""
        ...

    async def reopen_expiry(self, pending_id: str, retry_at: datetime) -> bool:
        """A fired expiry whose answer was not delivered: due again at `retry_at`."""
        ...
