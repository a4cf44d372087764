"""The waiter's half of a live answer: make the claimed response durable, then arm the watchdog.

The Asker's waiter runs this when it takes an offer from its inbox, before it returns the
answer to the agent: one guarded write settles the claim (DELIVER, and the session moves to
running in the same commit), the new session state is announced, and, inside that same
boundary, the primary-answer watchdog is armed. The responder that made the offer only
waits for its outcome (`AnswerOffer.settled`): nothing here calls back into the resolver, so the
answer path runs one way, resolver -> waiter -> this -> store and hand-offs.

The confirmation runs as a supervised task: a cancelled tool call cannot cut it in half.
"""

from __future__ import annotations

import logging

from clarion.clarification.handoffs import AnswerHandoffs
from clarion.clarification.waiters import AnswerOffer
from clarion.domain.lifecycle import DELIVER
from clarion.domain.models import SessionState
from clarion.ports import AnswerStore, Written
from clarion.ports.tracing import NO_TRACER, Tracer
from clarion.projection.events import EventPublisher
from clarion.runtime import failpoints
from clarion.runtime.supervisor import Supervisor, bounded

log = logging.getLogger(__name__)


class LiveConfirmation:
    def __init__(
        self,
        *,
        store: AnswerStore,
        publisher: EventPublisher,
        supervisor: Supervisor,
        handoffs: AnswerHandoffs,
        persist_s: float,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self._tracer = tracer
        self._store = store
        self._publisher = publisher
        self._supervisor = supervisor
        self._handoffs = handoffs
        self._persist_s = persist_s

    async def confirm(self, offer: AnswerOffer) -> Written | None:
        """What the confirmation wrote, or None when the claim was no longer there to settle."""
        return await self._supervisor.run_shielded(self._confirm(offer))

    async def _confirm(self, offer: AnswerOffer) -> Written | None:
        claim, response = offer.claim, offer.response
        with self._tracer.span(
            "confirm",
            parent=offer.trace,
            session_id=claim.bundle.session.id,
            turn_id=claim.bundle.current_turn_id,
            pending_id=response.pending_id,
        ) as span:
            written = await self._settle(offer)
            span.set("outcome", "confirmed" if written is not None else "lost")
            return written

    async def _settle(self, offer: AnswerOffer) -> Written | None:
        await failpoints.hit("live.before_confirm")
        claim, response = offer.claim, offer.response
        ids = [row.id for row in claim.claimed]
        written = await bounded(
            self._store.confirm_delivery(
                response.pending_id, ids, DELIVER, session_state=SessionState.RUNNING
            ),
            self._persist_s,
        )
        if written is not None:
            log.info(
                "live delivery confirmed",
                extra={
                    "pending_id": response.pending_id,
                    "session_id": claim.bundle.session.id,
                    "turn_id": claim.bundle.current_turn_id,
                },
            )
            if written.session is not None:
                # Announced before the agent has the answer, so every state it moves the
                # session to afterwards is announced after this one.
                await self._publisher.session_state(written.session)
            self._handoffs.arm_watchdog(claim, response)
        return written
