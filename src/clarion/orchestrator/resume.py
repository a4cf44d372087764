"""Detached-answer resume: one successor turn, dispatched at most once.

The sequence, each step its own commit or call, while holding the session's admission lane:
reserve an unpublished successor carrying its recovery identity; start the agent if it is not
running; mark the reservation attempted right before the prompt is handed over; hand the
resume prompt to the agent within a bounded wait; publish `session.turn.started` and only
then clear the recovery keys. Before the agent accepted, every
failure rolls back (delete the unreferenced reservation, restore exactly the claimed rows).
After it accepted, nothing can reopen the answer. A rollback that fails leaves the reservation
unresolved and blocks admission in this process until restart recovery reconciles it.
"""

from __future__ import annotations

import logging
from typing import NoReturn

from clarion import failpoints
from clarion.clarification.restorer import ClaimRestorer
from clarion.domain.bundles import questions_of
from clarion.domain.errors import AcceptedButUnfinalized
from clarion.domain.models import ClarificationResponse, SessionState, Turn
from clarion.domain.prompts import resume_prompt, with_recap
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.lanes import Lane, Lanes
from clarion.ports import AgentRuntime, ClaimResult, Store
from clarion.projection.events import EventPublisher
from clarion.supervisor import bounded

log = logging.getLogger(__name__)


class DetachedResume:
    def __init__(
        self,
        *,
        store: Store,
        runtime: AgentRuntime,
        publisher: EventPublisher,
        lanes: Lanes,
        admission: TurnAdmission,
        resume_accept_s: float,
        persist_s: float,
    ) -> None:
        self._store = store
        self._runtime = runtime
        self._publisher = publisher
        self._lanes = lanes
        self._admission = admission
        self._accept_s = resume_accept_s
        self._persist_s = persist_s
        self._restorer = ClaimRestorer(store, publisher, persist_s)

    async def resume(self, claim: ClaimResult, response: ClarificationResponse) -> Turn:
        bundle = claim.bundle
        session = bundle.session
        ids = [row.id for row in claim.claimed]
        source_turn_id = claim.claimed[0].turn_id or ""
        prompt = resume_prompt(questions_of(bundle), response)
        lane = self._lanes.get(session.id)
        async with lane.admission:
            if lane.blocked_reason is not None:
                await self._restore(claim, None)
            try:
                # An agent still finishing the question's turn gets the resume after it.
                await bounded(lane.idle.wait(), self._accept_s)
                turn = await bounded(
                    self._store.reserve_successor(
                        session.id,
                        source_turn_id=source_turn_id,
                        pending_id=bundle.pending_id,
                        message_ids=ids,
                    ),
                    self._persist_s,
                )
            except Exception:
                log.exception("successor reservation failed", extra=_ids(claim))
                await self._restore(claim, None)
            lane.hold_reservation(turn.id)
            try:
                return await self._attempt(lane, claim, turn, prompt)
            finally:
                if lane.blocked_reason is None:
                    lane.settle_reservation()

    async def _attempt(self, lane: Lane, claim: ClaimResult, turn: Turn, prompt: str) -> Turn:
        session = claim.bundle.session
        extra = {**_ids(claim), "turn_id": turn.id}
        generation: int | None = None
        try:
            await failpoints.hit("resume.after_reserve")
            # The agent is started (which can take seconds) before the marker: until the
            # marker is written a crash rolls the reservation back and the answer stays
            # answerable, so the at-most-once boundary sits right before the hand-over.
            recap = await self._admission.ensure_agent_locked(session)
            await failpoints.hit("resume.agent_ready")
            if not await bounded(self._store.mark_attempted(turn.id), self._persist_s):
                raise RuntimeError("attempt marker did not apply")
            log.info("resume attempt marked", extra=extra)
            await failpoints.hit("resume.after_attempt")
            await failpoints.hit("resume.dispatch")
            generation = lane.begin(turn.id)
            await bounded(
                self._runtime.prompt(session.id, with_recap(recap, prompt), generation=generation),
                self._accept_s,
            )
        except Exception:
            log.exception("resume prompt not accepted; rolling back", extra=extra)
            if generation is not None:
                lane.end(generation)
            await self._restore(claim, turn)
        log.info("resume prompt accepted by the agent", extra={**extra, "generation": generation})
        try:
            await failpoints.hit("resume.after_accept")
            await failpoints.hit("resume.publish")
            await self._publisher.turn("started", turn)
            published = await bounded(
                self._store.publish_successor(
                    turn.id,
                    pending_id=claim.bundle.pending_id,
                    message_ids=[row.id for row in claim.claimed],
                    session_state=SessionState.RUNNING,
                ),
                self._persist_s,
            )
            if not published:
                raise RuntimeError("successor publication did not apply")
        except Exception as exc:
            log.exception("accepted resume could not be published", extra=extra)
            await self._settle_unpublished(claim)
            raise AcceptedButUnfinalized(
                "clarification response was accepted, but dispatch state could not be finalized",
                pending_id=claim.bundle.pending_id,
                turn_id=turn.id,
            ) from exc
        log.info("successor turn published", extra=extra)
        if published.session is not None:
            # The state moved with the publication.
            await self._publisher.session_state(published.session)
        return turn

    async def _settle_unpublished(self, claim: ClaimResult) -> None:
        """The agent has the answer but the successor's publication failed: retire the
        delivery intent on its own, so the bundle reads terminal (delivered) now rather
        than `delivery_claimed` until a restart. The reservation keeps its dispatch keys,
        which startup recovery finalizes. Best effort: if this write fails too, recovery
        still settles the rows."""
        ids = [row.id for row in claim.claimed]
        try:
            written = await bounded(
                self._store.confirm_delivery(claim.bundle.pending_id, ids, delivered=True),
                self._persist_s,
            )
        except Exception:
            log.exception("delivery intent of an accepted resume not retired", extra=_ids(claim))
            return
        if written is not None:
            await self._restorer.publish_claimed(claim, written.rows)

    async def _restore(self, claim: ClaimResult, turn: Turn | None) -> NoReturn:
        """Roll back a dispatch known not to have been accepted, then raise."""
        lane = self._lanes.get(claim.bundle.session.id)
        if turn is not None:
            try:
                deleted = await bounded(self._store.rollback_successor(turn.id), self._persist_s)
            except Exception:
                log.exception("reservation rollback failed", extra=_ids(claim))
                deleted = False
            if not deleted:
                lane.blocked_reason = f"reservation {turn.id} could not be rolled back"
                log.error(
                    "reservation unresolved; admission blocked until restart",
                    extra={**_ids(claim), "turn_id": turn.id},
                )
                raise AcceptedButUnfinalized(
                    "clarification resume could not be rolled back; restart recovery will "
                    "reconcile it",
                    pending_id=claim.bundle.pending_id,
                    turn_id=turn.id,
                )
        await self._restorer.restore_or_fail(
            claim, code="resume_not_accepted", message="failed to resume clarification"
        )


def _ids(claim: ClaimResult) -> dict[str, str | None]:
    return {
        "pending_id": claim.bundle.pending_id,
        "session_id": claim.bundle.session.id,
        "task_id": claim.bundle.session.task_id,
    }
