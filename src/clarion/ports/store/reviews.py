"""A review's turn, as the review service reserves it (ReviewStore)."""

from __future__ import annotations

from typing import Protocol

from clarion.domain.models import Message, Turn
from clarion.ports.store.lookups import Lookups
from clarion.ports.store.records import NewMessage


class ReviewStore(Lookups, Protocol):
    async def reserve_review(self, session_id: str, *, turn_id: str) -> Turn:
        """An unpublished turn `turn_id` carrying the successor's dispatch keys (its claim key
        is `review:<turn_id>`), so that `mark_attempted`, `publish_successor`,
        `rollback_successor` and startup reconciliation treat it as they treat a detached
        answer's successor. SessionBusy, nothing written, when the session has an open turn or
        a live reservation; Conflict when it ended."""
        ...

    async def add_message(self, new: NewMessage) -> Message:
        """TurnStore's: insert one message (the review's prompt as the person wrote it)."""
        ...
