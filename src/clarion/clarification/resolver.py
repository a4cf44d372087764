"""The respond contract: one state-based entry point for answers and Skip.

Every response first claims the bundle's pending rows together with a durable delivery
intent. Then exactly one hand-off owns it: the live waiter (which confirms durably before the
agent sees the answer), a detached rejection (persisted, no resume), or a detached answer
(resumed as a new prompt). Failures before any hand-off restore exactly the claimed rows while
their turn is still current, and say the request may be retried.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from clarion.clarification.handoffs import AnswerHandoffs
from clarion.clarification.respond_result import RespondResult, as_recorded, outcome_of
from clarion.clarification.restorer import ClaimRestorer
from clarion.clarification.waiters import AnswerOffer, LiveWaiters, OfferState
from clarion.domain.answers import validate_response
from clarion.domain.bundles import (
    bundle_state,
    lost_to_cancellation,
    questions_of,
    winning_response,
)
from clarion.domain.errors import (
    AcceptedButUnfinalized,
    AcceptedButUnpublished,
    NotActive,
    NotFound,
    ResumeNotAccepted,
)
from clarion.domain.lifecycle import CLAIM, CLAIM_BY_POLICY, DELIVER, RETIRE_INTENT, Transition
from clarion.domain.models import (
    Bundle,
    BundleState,
    ClarificationResponse,
    Message,
)
from clarion.ports import AnswerStore, ClaimResult, Clock
from clarion.ports.tracing import NO_TRACER, Span, Tracer
from clarion.projection.events import EventPublisher
from clarion.runtime import failpoints
from clarion.runtime.supervisor import Supervisor, bounded

log = logging.getLogger(__name__)

ACTIVE = (BundleState.ACTIVE_LIVE, BundleState.ACTIVE_DETACHED)


class Resolver:
    def __init__(
        self,
        *,
        store: AnswerStore,
        waiters: LiveWaiters,
        publisher: EventPublisher,
        supervisor: Supervisor,
        clock: Clock,
        handoffs: AnswerHandoffs,
        live_confirm_s: float,
        persist_s: float,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self._tracer = tracer
        self._store = store
        self._waiters = waiters
        self._publisher = publisher
        self._supervisor = supervisor
        self._clock = clock
        self._handoffs = handoffs
        self._live_confirm_s = live_confirm_s
        self._persist_s = persist_s
        self._restorer = ClaimRestorer(store, publisher, persist_s)

    async def respond(
        self,
        pending_id: str,
        body: object,
        *,
        claim: Transition = CLAIM,
        answered_by: str | None = None,
    ) -> RespondResult:
        """`claim`: the transition the response applies, CLAIM for a person's; CLAIM_BY_POLICY
        is the waiting policy's expiry answering, exactly as a person would, and only if the
        expiry has not fired yet (the claim applies both or neither). `answered_by`: the user
        the answering channel names (a mapped Slack user), recorded with the claim."""
        with self._tracer.span("respond", pending_id=pending_id) as span:
            result = await self._respond(pending_id, body, claim, span, answered_by)
            span.set("outcome", outcome_of(result))
            return result

    async def _respond(
        self,
        pending_id: str,
        body: object,
        claim: Transition,
        span: Span,
        answered_by: str | None = None,
    ) -> RespondResult:
        questions = self._waiters.questions(pending_id)
        if questions is not None:
            # A live waiter holds the questions: no read before the claim, whose guarded
            # update decides whether the bundle is still active (`_lost` says why not).
            response = validate_response(body, questions, pending_id)
        else:
            bundle = await self._store.find_bundle(pending_id)
            if bundle is None:
                raise NotFound("clarification request not found", pending_id=pending_id)
            response = validate_response(body, questions_of(bundle), pending_id)
            state = bundle_state(bundle, has_live_waiter=self._waiters.has(pending_id))
            if state not in ACTIVE:
                self._retire_inert(bundle, state)
                raise NotActive(
                    "clarification request is no longer active",
                    state=str(state),
                    response=winning_response(bundle),
                    pending_id=pending_id,
                )
        if answered_by is not None and claim is CLAIM:
            response = replace(response, answered_by=answered_by)
        if claim is CLAIM_BY_POLICY:
            response = replace(response, by_policy=True)
            span.set("by_policy", True)
        span.set("rejected", response.rejected)
        # From the claim on, the sequence must finish even if the HTTP request goes away.
        return await self._supervisor.run_shielded(
            self._claim_and_hand_off(response, claim, span), name=f"respond:{pending_id}"
        )

    async def _claim_and_hand_off(
        self, response: ClarificationResponse, transition: Transition, span: Span
    ) -> RespondResult:
        pending_id = response.pending_id
        with self._tracer.span("claim", pending_id=pending_id) as claim_span:
            claim = await bounded(
                self._store.claim_response(response, transition, now=self._clock.now()),
                self._persist_s,
            )
            claim_span.set("outcome", "claimed" if claim.claimed else "lost")
        session = claim.bundle.session
        span.set("task_id", session.task_id)
        span.set("session_id", session.id)
        span.set("turn_id", claim.bundle.current_turn_id)
        if not claim.claimed:
            raise self._lost(claim)
        stamped = as_recorded(response, claim)
        log.info(
            "clarification response claimed",
            extra={
                "pending_id": pending_id,
                "session_id": claim.bundle.session.id,
                "turn_id": claim.bundle.current_turn_id,
                "rows": len(claim.claimed),
                "rejected": response.rejected,
            },
        )
        await failpoints.hit("respond.after_claim")
        if self._waiters.has(pending_id):
            return await self._deliver_live(claim, stamped)
        if stamped.rejected:
            return await self._persist_detached_rejection(claim, stamped)
        return await self._resume_detached(claim, stamped)

    async def _resume_detached(
        self, claim: ClaimResult, response: ClarificationResponse
    ) -> RespondResult:
        try:
            with self._tracer.span(
                "resume", session_id=claim.bundle.session.id, pending_id=response.pending_id
            ) as span:
                turn = await self._handoffs.resume_detached(claim, response)
                span.set("turn_id", turn.id)
        except ResumeNotAccepted:
            await self._restorer.restore_or_fail(
                claim, code="resume_not_accepted", message="failed to resume clarification"
            )
        except AcceptedButUnpublished:
            await self._settle_delivered(claim)
            raise
        self._publish_in_background(claim)
        return RespondResult(response=response, resumed=True, successor_turn_id=turn.id)

    async def _settle_delivered(self, claim: ClaimResult) -> None:
        """The agent has the answer but its successor's publication failed: retire the
        delivery intent on its own, so the bundle reads terminal (delivered) now rather than
        `delivery_claimed` until a restart. The reservation keeps its dispatch keys, which
        startup recovery finalizes. Best effort: if this write fails too, recovery settles
        the rows."""
        ids = [row.id for row in claim.claimed]
        try:
            written = await bounded(
                self._store.confirm_delivery(claim.bundle.pending_id, ids, DELIVER),
                self._persist_s,
            )
        except Exception:
            log.exception(
                "delivery intent of an accepted resume not retired",
                extra={"pending_id": claim.bundle.pending_id},
            )
            return
        if written is not None:
            self._publish_in_background(claim, written.rows)

    def _publish_in_background(
        self, claim: ClaimResult, rows: tuple[Message, ...] | None = None
    ) -> None:
        """The outcome is durable; clients learn of it without the responder waiting for the
        fan-out (a projection read and a summary refresh). `rows`: the claimed rows as the
        write that settled them returned them, when it did (saves reading them again)."""
        self._supervisor.spawn(
            self._publish(claim, rows), name=f"publish:{claim.bundle.pending_id}"
        )

    async def _publish(self, claim: ClaimResult, rows: tuple[Message, ...] | None) -> None:
        with self._tracer.span("publish", pending_id=claim.bundle.pending_id):
            await self._restorer.publish_claimed(claim, rows)

    def _lost(self, claim: ClaimResult) -> Exception:
        bundle = claim.bundle
        if lost_to_cancellation(bundle):
            # A cancellation won after this responder loaded the bundle.
            return NotFound("clarification request not found", pending_id=bundle.pending_id)
        state = bundle_state(bundle, has_live_waiter=self._waiters.has(bundle.pending_id))
        self._retire_inert(bundle, state)
        return NotActive(
            "clarification request is no longer active",
            state=str(state),
            response=winning_response(bundle),
            pending_id=bundle.pending_id,
        )

    def _retire_inert(self, bundle: Bundle, state: BundleState) -> None:
        """An inert bundle never hands anything to a waiter that still exists."""
        if bundle.current_turn_id is None or state is BundleState.SUPERSEDED_HISTORY:
            self._waiters.cancel(bundle.pending_id)

    async def _deliver_live(
        self, claim: ClaimResult, response: ClarificationResponse
    ) -> RespondResult:
        """Offer the claim to the live waiter and wait for its outcome: the waiter confirms it
        durably (clarification/live_confirmation.py) before the agent sees the answer."""
        pending_id = response.pending_id
        with self._tracer.span("deliver", pending_id=pending_id) as span:
            # The waiter's confirmation (another task) continues this span's trace.
            offer = AnswerOffer(response=response, claim=claim, trace=self._tracer.carrier())
            await self._offer_and_wait(offer)
            span.set("outcome", str(offer.state))
        if offer.state is OfferState.CONFIRMED:
            written = offer.written
            self._publish_in_background(claim, written.rows if written is not None else None)
            return RespondResult(
                response=response, resumed=False, successor_turn_id=None, live=True
            )
        await self._restorer.restore_or_fail(
            claim, code="delivery_failed", message="failed to deliver clarification response"
        )

    async def _offer_and_wait(self, offer: AnswerOffer) -> None:
        pending_id = offer.response.pending_id
        if not self._waiters.offer(pending_id, offer):
            offer.abandon()
            return
        try:
            await bounded(offer.settled.wait(), self._live_confirm_s)
        except TimeoutError:
            if not offer.abandon():
                # The waiter started confirming: that confirmation owns the outcome.
                try:
                    await bounded(offer.settled.wait(), self._persist_s)
                except TimeoutError:
                    raise AcceptedButUnfinalized(
                        "clarification response was accepted, but delivery state could "
                        "not be finalized",
                        pending_id=pending_id,
                    ) from None

    async def _persist_detached_rejection(
        self, claim: ClaimResult, response: ClarificationResponse
    ) -> RespondResult:
        ids = [row.id for row in claim.claimed]
        with self._tracer.span("confirm", pending_id=response.pending_id) as span:
            written = await bounded(
                self._store.confirm_delivery(response.pending_id, ids, RETIRE_INTENT),
                self._persist_s,
            )
            span.set("outcome", "confirmed" if written else "lost")
        if not written:
            raise AcceptedButUnfinalized(
                "clarification rejection was accepted, but its state could not be finalized",
                pending_id=response.pending_id,
            )
        log.info(
            "detached clarification rejected; no resume",
            extra={"pending_id": response.pending_id, "session_id": claim.bundle.session.id},
        )
        self._publish_in_background(claim)
        return RespondResult(response=response, resumed=False, successor_turn_id=None)
