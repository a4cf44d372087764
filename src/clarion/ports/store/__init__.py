"""The storage seam: the store's protocols, one per consumer, their result types, and the
Clock it writes times with.

One module per consumer's protocol (answers, turns, recovery, reads, access, permissions,
outbox, deadlines, worktrees, archive, reviews), each method saying what it guarantees and
what None/False/() means; the records they exchange in records.py. The store hands each
port's object out alone (`clarion.store.Stores`); nothing in the package implements or
names their union (the store's contract tests see it as `tests/whole_store.py`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from clarion.ports.store.access import AccessStore
from clarion.ports.store.answers import AnswerStore
from clarion.ports.store.archive import ArchiveStore
from clarion.ports.store.deadlines import DeadlineStore
from clarion.ports.store.lookups import Lookups
from clarion.ports.store.outbox import OutboxStore
from clarion.ports.store.permissions import PermissionStore
from clarion.ports.store.reads import ReadStore
from clarion.ports.store.records import (
    ChangedBundle,
    ClaimResult,
    DeadlineRecord,
    InboxEntry,
    IntentRecovery,
    MessagePage,
    NewMessage,
    QueuedDelivery,
    ReservationRecovery,
    SummaryInputs,
    TokenOwner,
    Written,
)
from clarion.ports.store.recovery import RecoveryStore
from clarion.ports.store.reviews import ReviewStore
from clarion.ports.store.turns import TurnStore
from clarion.ports.store.worktrees import WorktreeStore

__all__ = [
    "AccessStore",
    "AnswerStore",
    "ArchiveStore",
    "ChangedBundle",
    "ClaimResult",
    "Clock",
    "DeadlineRecord",
    "DeadlineStore",
    "InboxEntry",
    "IntentRecovery",
    "Lookups",
    "MessagePage",
    "NewMessage",
    "OutboxStore",
    "PermissionStore",
    "QueuedDelivery",
    "ReadStore",
    "RecoveryStore",
    "ReservationRecovery",
    "ReviewStore",
    "SummaryInputs",
    "TokenOwner",
    "TurnStore",
    "WorktreeStore",
    "Written",
]


class Clock(Protocol):
    """Time for the services: wall time for records, monotonic time and sleeping for timers
    (so a test's manual clock drives every deadline)."""

    def now(self) -> datetime:
        """Current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences mean anything."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once `seconds` passed on this clock."""
        ...
