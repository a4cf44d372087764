"""Detached-answer resume: one successor turn, dispatched at most once.

The sequence, each step its own commit or call, while holding the session's admission lane:
reserve an unpublished successor carrying its recovery identity; start the agent if it is not
running; mark the reservation attempted right before the prompt is handed over; hand the
resume prompt to the agent within a bounded wait; publish `session.turn.started` and only
then clear the recovery keys. Before the agent accepted, every
failure rolls back (delete the unreferenced reservation, restore exactly the claimed rows).
After it accepted, nothing can reopen the answer. A rollback that fails leaves the reservation
unresolved and blocks admission in this process until restart recovery reconciles it.

It reports how it ended and never touches the claimed rows itself: the resolver, which owns
the claim, restores it (ResumeNotAccepted) or settles it as delivered (AcceptedButUnpublished).

A person's review of a task's changes (`review`) takes this same path from the reservation on:
its reservation names a claim key no message carries, so the same promises hold (the attempt
marker once the agent is ready, at most one dispatch, a rollback before the agent accepted,
startup keeping an attempted one and deleting any other).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from clarion.domain.errors import (
    AcceptedButUnfinalized,
    AcceptedButUnpublished,
    ResumeNotAccepted,
)
from clarion.domain.lifecycle import DELIVER
from clarion.domain.models import Session, SessionState, Turn
from clarion.domain.prompts import recap_after, with_recap
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.lanes import Lane, Lanes
from clarion.ports import AgentRuntime, AnswerStore, ClaimResult
from clarion.ports.metrics import NO_METRICS, Metrics
from clarion.projection.events import EventPublisher
from clarion.runtime import failpoints
from clarion.runtime.supervisor import bounded

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Dispatch:
    """What a reserved turn hands over and settles: the claim it publishes (`pending_id`,
    `message_ids`), and the ids its log lines and errors carry."""

    session: Session
    pending_id: str
    message_ids: tuple[str, ...]
    ids: dict[str, str]
    # A restarted agent's recap goes after the prompt, not before (a review's first words
    # are promised); still one prompt, one turn.
    recap_last: bool = False


def _of_claim(claim: ClaimResult) -> Dispatch:
    return Dispatch(
        session=claim.bundle.session,
        pending_id=claim.bundle.pending_id,
        message_ids=tuple(row.id for row in claim.claimed),
        ids=_ids(claim),
    )


class DetachedResume:
    def __init__(
        self,
        *,
        store: AnswerStore,
        runtime: AgentRuntime,
        publisher: EventPublisher,
        lanes: Lanes,
        admission: TurnAdmission,
        resume_accept_s: float,
        persist_s: float,
        metrics: Metrics = NO_METRICS,
    ) -> None:
        self._metrics = metrics
        self._store = store
        self._runtime = runtime
        self._publisher = publisher
        self._lanes = lanes
        self._admission = admission
        self._accept_s = resume_accept_s
        self._persist_s = persist_s

    async def resume(self, claim: ClaimResult, prompt: str) -> Turn:
        bundle = claim.bundle
        session = bundle.session
        ids = [row.id for row in claim.claimed]
        source_turn_id = claim.claimed[0].turn_id or ""
        lane = self._lanes.get(session.id)
        async with lane.admission:
            if lane.blocked_reason is not None:
                raise ResumeNotAccepted(
                    "prompt admission is blocked until restart recovery: " + lane.blocked_reason,
                    **_ids(claim),
                )
            try:
                # An agent still finishing the question's turn gets the resume after it.
                await bounded(lane.idle.wait(), self._accept_s)
            except Exception as exc:
                log.exception("the session stayed busy; resume refused", extra=_ids(claim))
                raise ResumeNotAccepted(
                    "the successor could not be reserved", **_ids(claim)
                ) from exc
            reserving = asyncio.ensure_future(
                self._store.reserve_successor(
                    session.id,
                    source_turn_id=source_turn_id,
                    pending_id=bundle.pending_id,
                    message_ids=ids,
                )
            )
            try:
                turn = await bounded(asyncio.shield(reserving), self._persist_s)
            except Exception as exc:
                log.exception("successor reservation failed", extra=_ids(claim))
                if isinstance(exc, TimeoutError):
                    await self._withdraw_late(lane, claim, reserving)
                raise ResumeNotAccepted(
                    "the successor could not be reserved", **_ids(claim)
                ) from exc
            return await self.dispatch_reserved(lane, _of_claim(claim), turn, prompt)

    async def dispatch_reserved(
        self, lane: Lane, dispatch: Dispatch, turn: Turn, prompt: str
    ) -> Turn:
        """Hand the reserved `turn` its prompt: start the agent, mark the attempt, dispatch,
        publish. The caller holds the lane's admission and just reserved `turn`."""
        lane.hold_reservation(turn.id)
        try:
            return await self._attempt(lane, dispatch, turn, prompt)
        finally:
            if lane.blocked_reason is None:
                lane.settle_reservation()

    async def _attempt(self, lane: Lane, dispatch: Dispatch, turn: Turn, prompt: str) -> Turn:
        session = dispatch.session
        extra = {**dispatch.ids, "turn_id": turn.id}
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
            text = recap_after(recap, prompt) if dispatch.recap_last else with_recap(recap, prompt)
            await bounded(
                self._runtime.prompt(session.id, text, generation=generation), self._accept_s
            )
        except Exception as exc:
            log.exception("resume prompt not accepted; rolling back", extra=extra)
            if generation is not None:
                lane.end(generation)
            await self._roll_back(lane, dispatch, turn)
            raise ResumeNotAccepted("the agent did not accept the resume prompt", **extra) from exc
        log.info("resume prompt accepted by the agent", extra={**extra, "generation": generation})
        self._metrics.resumed()
        try:
            await failpoints.hit("resume.after_accept")
            await failpoints.hit("resume.publish")
            await self._publisher.turn("started", turn)
            published = await bounded(
                self._store.publish_successor(
                    turn.id,
                    DELIVER,
                    pending_id=dispatch.pending_id,
                    message_ids=list(dispatch.message_ids),
                    session_state=SessionState.RUNNING,
                ),
                self._persist_s,
            )
            if not published:
                raise RuntimeError("successor publication did not apply")
        except Exception as exc:
            log.exception("accepted resume could not be published", extra=extra)
            raise AcceptedButUnpublished(
                "clarification response was accepted, but dispatch state could not be finalized",
                pending_id=dispatch.pending_id,
                turn_id=turn.id,
            ) from exc
        log.info("successor turn published", extra=extra)
        if published.session is not None:
            # The state moved with the publication.
            await self._publisher.session_state(published.session)
        return turn

    async def _withdraw_late(
        self, lane: Lane, claim: ClaimResult, reserving: asyncio.Future[Turn]
    ) -> None:
        """A reservation whose deadline passed may still commit: store transactions finish
        despite a cancelled caller. Left behind, it would refuse every later resume of the
        session ("a successor reservation is already live"), so wait for it and delete it. One
        whose outcome stays unknown blocks admission until restart recovery reconciles it."""
        try:
            turn = await bounded(asyncio.shield(reserving), self._persist_s)
        except TimeoutError:
            # Still running: whatever it ends with is reconciled at restart, not read here.
            reserving.add_done_callback(lambda f: f.cancelled() or f.exception())
            lane.blocked_reason = "a successor reservation outlived its deadline"
            log.error(
                "late reservation unresolved; admission blocked until restart", extra=_ids(claim)
            )
            return
        except Exception:
            return  # the write failed after all: nothing was reserved
        if await self._delete_reservation(lane, _ids(claim), turn):
            log.info("late reservation withdrawn", extra={**_ids(claim), "turn_id": turn.id})

    async def _roll_back(self, lane: Lane, dispatch: Dispatch, turn: Turn) -> None:
        """Delete the reservation of a dispatch known not to have been accepted. One that
        cannot be deleted stays unresolved: admission is blocked until restart recovery, and
        the answer's outcome is left to it."""
        if await self._delete_reservation(lane, dispatch.ids, turn):
            return
        raise AcceptedButUnfinalized(
            "clarification resume could not be rolled back; restart recovery will reconcile it",
            pending_id=dispatch.pending_id,
            turn_id=turn.id,
        )

    async def _delete_reservation(self, lane: Lane, ids: dict[str, str], turn: Turn) -> bool:
        """Delete a reservation no agent received; when that fails, block the session's
        admission until restart recovery reconciles it. Returns whether it was deleted."""
        try:
            deleted = await bounded(self._store.rollback_successor(turn.id), self._persist_s)
        except Exception:
            log.exception("reservation rollback failed", extra=ids)
            deleted = False
        if not deleted:
            lane.blocked_reason = f"reservation {turn.id} could not be rolled back"
            log.error(
                "reservation unresolved; admission blocked until restart",
                extra={**ids, "turn_id": turn.id},
            )
        return deleted


def _ids(claim: ClaimResult) -> dict[str, str]:
    return {
        "pending_id": claim.bundle.pending_id,
        "session_id": claim.bundle.session.id,
        "task_id": claim.bundle.session.task_id,
    }
