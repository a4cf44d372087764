"""A review's turn, as the review service reserves it (ReviewStore)."""

from __future__ import annotations

from typing import Protocol

from clarion.domain.models import Turn


class ReviewStore(Protocol):
    async def reserve_review(self, session_id: str, *, turn_id: str) -> Turn:
        """An unpublished turn `turn_id` carrying the successor's dispatch keys (its claim key
        is `review:<turn_id>`), so that `mark_attempted`, `publish_successor`,
        `rollback_successor` and startup reconciliation treat it as they treat a detached
        answer's successor. SessionBusy, nothing written, when the session has an open turn or
        a live reservation; Conflict when it ended."""
        ...
