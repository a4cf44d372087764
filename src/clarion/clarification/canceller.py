"""Detach, expire and cancel bundles: the transitions that take a bundle away from its waiter.

Each runs as a supervised task under its own deadline, so neither a cancelled HTTP request nor
a locked database can leave it half done or hold its caller forever. Detach and expiry return
only the rows they changed, so repeating one writes and publishes nothing.
"""

from __future__ import annotations

import logging

from clarion.clarification.waiters import LiveWaiters
from clarion.domain.bundles import bundle_state, winning_response
from clarion.domain.errors import NotActive, NotFound
from clarion.domain.lifecycle import CANCEL, DETACH, EXPIRE
from clarion.domain.models import Message
from clarion.ports import AnswerStore
from clarion.projection.events import EventPublisher
from clarion.runtime.supervisor import Supervisor, bounded

log = logging.getLogger(__name__)


class ClarificationCanceller:
    def __init__(
        self,
        store: AnswerStore,
        publisher: EventPublisher,
        waiters: LiveWaiters,
        supervisor: Supervisor,
        persist_s: float,
    ) -> None:
        self._store = store
        self._publisher = publisher
        self._waiters = waiters
        self._supervisor = supervisor
        self._persist_s = persist_s

    async def detach(
        self, session_id: str, *, pending_id: str | None = None
    ) -> tuple[Message, ...]:
        """Record that no waiter owns the session's current-turn bundles (or one of them)."""
        return await self._supervisor.run_shielded(
            self._detach(session_id, pending_id), name=f"detach:{session_id}"
        )

    async def _detach(self, session_id: str, pending_id: str | None) -> tuple[Message, ...]:
        changed = await bounded(
            self._store.transition_session_bundles(session_id, DETACH, pending_id=pending_id),
            self._persist_s,
        )
        if changed:
            log.info(
                "clarification detached",
                extra={
                    "session_id": session_id,
                    "pending_id": pending_id,
                    "rows": len(changed),
                    "turn_id": changed[0].turn_id,
                },
            )
            await bounded(self._publisher.messages("updated", changed), self._persist_s)
        return changed

    async def expire_session(self, session_id: str) -> tuple[Message, ...]:
        """The session reached a terminal state: its current-turn bundles expire."""
        return await self._supervisor.run_shielded(
            self._expire(session_id), name=f"expire:{session_id}"
        )

    async def _expire(self, session_id: str) -> tuple[Message, ...]:
        for waiter in self._waiters.for_session(session_id):
            self._waiters.cancel(waiter.pending_id)
        changed = await bounded(
            self._store.transition_session_bundles(session_id, EXPIRE), self._persist_s
        )
        if changed:
            log.info(
                "clarification expired", extra={"session_id": session_id, "rows": len(changed)}
            )
            await bounded(self._publisher.messages("updated", changed), self._persist_s)
        return changed

    async def cancel(self, pending_id: str) -> tuple[Message, ...]:
        """Low-level cancel of a bundle still owned by a live waiter in this process."""
        if not self._waiters.has(pending_id):
            raise NotFound("clarification request not found", pending_id=pending_id)
        return await self._supervisor.run_shielded(
            self._cancel(pending_id), name=f"cancel:{pending_id}"
        )

    async def _cancel(self, pending_id: str) -> tuple[Message, ...]:
        changed = await bounded(self._store.transition_bundle(pending_id, CANCEL), self._persist_s)
        if not changed:
            bundle = await self._store.find_bundle(pending_id)
            if bundle is None:
                raise NotFound("clarification request not found", pending_id=pending_id)
            state = bundle_state(bundle, has_live_waiter=self._waiters.has(pending_id))
            raise NotActive(
                "clarification request is no longer active",
                state=str(state),
                response=winning_response(bundle),
                pending_id=pending_id,
            )
        self._waiters.cancel(pending_id)
        log.info(
            "clarification cancelled",
            extra={"pending_id": pending_id, "session_id": changed[0].session_id},
        )
        await bounded(self._publisher.messages("updated", changed), self._persist_s)
        return changed
