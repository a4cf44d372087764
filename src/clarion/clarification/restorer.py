"""Putting a failed claim back: the one place both respond paths restore from.

"Restore" is exactly the rows this claim took, and only while their turn is still current and
the session not terminal (one guarded UPDATE in the store). After a restore the task summary is
refreshed synchronously and the restored rows are published even if that refresh fails, and the
caller learns the response may be retried. A claim that can no longer be restored (newer work
superseded it) has its intent retired so it reads as terminal history, and the caller learns
that a retry will not help.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NoReturn

from clarion.domain.errors import AcceptedButUnfinalized, RetryableFailure
from clarion.domain.lifecycle import RESTORE_CLAIM, RETIRE_INTENT
from clarion.domain.models import Message
from clarion.ports import AnswerStore, ClaimResult
from clarion.projection.events import EventPublisher
from clarion.runtime.supervisor import bounded

log = logging.getLogger(__name__)


class ClaimRestorer:
    def __init__(self, store: AnswerStore, publisher: EventPublisher, persist_s: float) -> None:
        self._store = store
        self._publisher = publisher
        self._persist_s = persist_s

    async def restore_or_fail(self, claim: ClaimResult, *, code: str, message: str) -> NoReturn:
        bundle = claim.bundle
        ids = [row.id for row in claim.claimed]
        restored = await bounded(
            self._store.transition_bundle(bundle.pending_id, RESTORE_CLAIM, message_ids=ids),
            self._persist_s,
        )
        if not restored:
            await bounded(
                self._store.transition_bundle(bundle.pending_id, RETIRE_INTENT, message_ids=ids),
                self._persist_s,
            )
        log.warning(
            "clarification claim put back"
            if restored
            else "clarification claim could not be restored; retired as terminal history",
            extra={
                "pending_id": bundle.pending_id,
                "session_id": bundle.session.id,
                "task_id": bundle.session.task_id,
                "code": code,
            },
        )
        await self._publisher.refresh_summary(bundle.session.task_id)
        await self.publish_claimed(claim)
        if restored:
            raise RetryableFailure(
                f"{message}; response can be retried", code=code, pending_id=bundle.pending_id
            )
        raise AcceptedButUnfinalized(
            f"{message}, and the clarification is no longer answerable",
            pending_id=bundle.pending_id,
        )

    async def publish_claimed(
        self, claim: ClaimResult, rows: Sequence[Message] | None = None
    ) -> None:
        """Publish the claimed rows as they are now: `rows` when the caller has them as the
        last write left them, else read again."""
        await self._publisher.messages(
            "updated", await self.reread(claim) if rows is None else rows
        )

    async def reread(self, claim: ClaimResult) -> list[Message]:
        bundle = await self._store.find_bundle(claim.bundle.pending_id)
        if bundle is None:
            return []
        claimed = {row.id for row in claim.claimed}
        return [row for row in bundle.rows if row.id in claimed]
