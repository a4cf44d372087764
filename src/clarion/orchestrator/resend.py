"""Sending an ambiguous answer again, as the person's explicit decision.

A detached answer whose dispatch outcome a restart left unknown (`delivery: "ambiguous"`) is
terminal: Clarion never re-sends it by itself, since the agent may already have it. The person
may. The one exception is a live answer the agent itself reported it never read (the tool call
that asked failed as the answer was confirmed: `send_unread_again`): it is marked ambiguous and
sent again once, the same way. A resend claims the bundle durably (one resend in flight at
most), starts a new turn with the same resume prompt through ordinary admission, and records the
turn once the agent accepted the prompt. A refusal releases the claim, so the answer reads
ambiguous again and may be resent; a crash mid-way is released at startup for the same reason.
"""

from __future__ import annotations

import logging

from clarion.domain.bundles import (
    bundle_state,
    questions_of,
    receipt_of,
    stored_response,
    winning_response,
)
from clarion.domain.errors import AcceptedButUnfinalized, NotActive, NotFound, RetryableFailure
from clarion.domain.lifecycle import (
    CLAIM_RESEND,
    FINISH_RESEND,
    MARK_UNREAD,
    RELEASE_RESEND,
    resent_by,
)
from clarion.domain.models import Bundle, Receipt
from clarion.domain.prompts import resume_prompt
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.lanes import Lanes
from clarion.ports import AnswerStore
from clarion.projection.events import EventPublisher
from clarion.runtime.supervisor import bounded

log = logging.getLogger(__name__)


class AnswerResender:
    def __init__(
        self,
        *,
        store: AnswerStore,
        admission: TurnAdmission,
        publisher: EventPublisher,
        lanes: Lanes,
        resume_accept_s: float,
        persist_s: float,
    ) -> None:
        self._store = store
        self._admission = admission
        self._publisher = publisher
        self._lanes = lanes
        self._accept_s = resume_accept_s
        self._persist_s = persist_s

    async def resend(self, pending_id: str) -> str:
        """Start one new turn carrying the bundle's answer; returns its id. 409 unless the
        answer's delivery is ambiguous and no resend of it is in flight."""
        bundle = await self._store.find_bundle(pending_id)
        if bundle is None:
            raise NotFound("clarification request not found", pending_id=pending_id)
        response = stored_response(bundle)
        if receipt_of(bundle) is not Receipt.AMBIGUOUS or response is None:
            raise _not_resendable(bundle)
        session = bundle.session
        extra = {"pending_id": pending_id, "session_id": session.id, "task_id": session.task_id}
        lane = self._lanes.get(session.id)
        async with lane.admission:
            # A prompt still running gets the resend after it, as a detached answer would.
            await bounded(lane.idle.wait(), self._accept_s)
            claimed = await bounded(
                self._store.transition_bundle(pending_id, CLAIM_RESEND), self._persist_s
            )
            if not claimed:
                raise _not_resendable(await self._store.find_bundle(pending_id) or bundle)
            log.info("resend claimed", extra=extra)
            prompt = resume_prompt(questions_of(bundle), response)
            try:
                turn = await self._admission.dispatch_locked(
                    lane, session, prompt, record_prompt=False
                )
            except Exception as exc:
                log.exception("resend not accepted by the agent; released", extra=extra)
                released = await bounded(
                    self._store.transition_bundle(pending_id, RELEASE_RESEND),
                    self._persist_s,
                )
                await self._publisher.messages("updated", released)
                raise RetryableFailure(
                    "the agent did not accept the resent answer; it may be sent again",
                    code="resume_not_accepted",
                    pending_id=pending_id,
                ) from exc
        try:
            finished = await bounded(
                self._store.transition_bundle(pending_id, FINISH_RESEND, values=resent_by(turn.id)),
                self._persist_s,
            )
        except Exception as exc:
            log.exception("resent answer accepted but not recorded", extra=extra)
            raise AcceptedButUnfinalized(
                "the agent accepted the resent answer, but that could not be recorded",
                pending_id=pending_id,
                turn_id=turn.id,
            ) from exc
        log.info("resent answer accepted by the agent", extra={**extra, "turn_id": turn.id})
        await self._publisher.messages("updated", finished)
        return turn.id

    async def send_unread_again(self, pending_id: str) -> None:
        """A live answer the agent reported it never read: mark it ambiguous durably, then
        send it again once, after the agent's running turn. A refusal, or a turn that does not
        end within the resume's acceptance limit, leaves it ambiguous for the person."""
        marked = await bounded(
            self._store.transition_bundle(pending_id, MARK_UNREAD), self._persist_s
        )
        if not marked:
            log.info("unread live answer: nothing to mark", extra={"pending_id": pending_id})
            return
        extra = {"pending_id": pending_id, "session_id": marked[0].session_id}
        log.info("live answer unread by the agent; delivery ambiguous", extra=extra)
        await self._publisher.messages("updated", marked)
        try:
            turn_id = await self.resend(pending_id)
        except Exception:
            log.warning("unread live answer left ambiguous", extra=extra, exc_info=True)
            return
        log.info("unread live answer sent again", extra={**extra, "turn_id": turn_id})


def _not_resendable(bundle: Bundle) -> NotActive:
    receipt = receipt_of(bundle)
    return NotActive(
        "only an answer whose delivery is ambiguous can be sent again",
        state=str(bundle_state(bundle, has_live_waiter=False)),
        response=winning_response(bundle),
        delivery=None if receipt is None else receipt.value,
        pending_id=bundle.pending_id,
    )
