"""The agent's side of a question: write the bundle, wait for an answer, or detach.

Called by the MCP tool. The bundle's rows are written in the session's current turn before a
waiter exists; the waiter then holds the tool call, sending keep-alives, until a confirmed
answer, a cancellation, the wait limit, or the agent dropping the call (a cancelled call, or its
connection gone: `dropped`), or the server stopping (`detach_all`). The last three detach the
bundle so the answer, when it comes, resumes the agent as a new prompt.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from clarion.clarification.canceller import ClarificationCanceller
from clarion.clarification.live_confirmation import LiveConfirmation
from clarion.clarification.policies import WaitingPolicies
from clarion.clarification.waiters import AnswerOffer, Cancelled, LiveWaiters, Waiter
from clarion.domain.answers import tool_result_text
from clarion.domain.bundles import questions_of_rows
from clarion.domain.errors import NotFound, QuestionDetached
from clarion.domain.ids import new_id
from clarion.domain.models import AuthorType, Bundle, MessageType, SessionState
from clarion.domain.prompts import DETACHED_TOOL_ERROR
from clarion.domain.questions import bundle_row_metadata, parse_ask
from clarion.domain.waiting import deadlines_for, expiry_notice, parse_expires_in
from clarion.ports import AnswerStore, Clock, DeadlineRecord, NewMessage
from clarion.ports.tracing import NO_TRACER, Span, Tracer
from clarion.projection.events import EventPublisher

log = logging.getLogger(__name__)

Progress = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class AskLimits:
    wait_s: float
    keepalive_s: float


def _no_wake(bundle: Bundle | None, deadline: DeadlineRecord) -> None:
    return None


class Asker:
    def __init__(
        self,
        store: AnswerStore,
        waiters: LiveWaiters,
        publisher: EventPublisher,
        canceller: ClarificationCanceller,
        limits: AskLimits,
        clock: Clock,
        confirmation: LiveConfirmation,
        policies: WaitingPolicies | None = None,
        deadline_written: Callable[[Bundle | None, DeadlineRecord], None] = _no_wake,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self._tracer = tracer
        self._clock = clock
        self._confirmation = confirmation
        self._policies = policies or WaitingPolicies()
        # Hands the deadline scheduler a question's committed deadline row, and the bundle as
        # written (None when the session ended meanwhile), to arm and announce unread.
        self._deadline_written = deadline_written
        self._store = store
        self._waiters = waiters
        self._publisher = publisher
        self._canceller = canceller
        self._limits = limits
        # Each waiting call's `dropped`, by pending id: a stopping server sets them all.
        self._calls: dict[str, asyncio.Event] = {}
        self._stopping = False

    def detach_all(self) -> None:
        """The server is stopping: every waiting call detaches its question now (it stays
        answerable, and an answer resumes the agent after the restart), and a call that asks
        from now on detaches as soon as its question is written."""
        self._stopping = True
        for dropped in list(self._calls.values()):
            dropped.set()

    async def ask(
        self,
        session_id: str,
        arguments: object,
        progress: Progress,
        dropped: asyncio.Event | None = None,
    ) -> str:
        """Returns the tool result text; raises InvalidInput (nothing written),
        QuestionDetached, or NotFound when the session has no durable turn.

        `dropped` is set when the call's connection is gone: nothing could carry a result back,
        so the bundle detaches instead of waiting for an answer only a new prompt can deliver."""
        with self._tracer.span("ask", session_id=session_id) as span:
            return await self._ask(session_id, arguments, progress, dropped, span)

    async def _ask(
        self,
        session_id: str,
        arguments: object,
        progress: Progress,
        dropped: asyncio.Event | None,
        span: Span,
    ) -> str:
        questions, context = parse_ask(arguments)
        expires_in = parse_expires_in(
            arguments.get("expires_in") if isinstance(arguments, Mapping) else None
        )
        session, turn_id = await self._store.session_with_current_turn(session_id)
        if session.state.is_terminal:
            raise NotFound("session has ended", session_id=session_id)
        if turn_id is None:
            raise NotFound("session has no durable turn to own a question", session_id=session_id)
        policy = await self._policies.for_session(session)
        deadlines = deadlines_for(policy, expires_in, self._clock.now()) if policy else None
        pending_id = new_id()
        span.set("task_id", session.task_id)
        span.set("turn_id", turn_id)
        span.set("pending_id", pending_id)
        metadata = bundle_row_metadata(
            pending_id, questions, context, waiting=deadlines is not None
        )
        # The waiter exists before the rows do: a responder that sees the rows always finds
        # the live waiter, and never mistakes a question still being asked for a detached one.
        waiter = self._waiters.register(pending_id, session_id, turn_id)
        try:
            # The session waits for input from the same commit that stores the question.
            written = await self._store.create_bundle(
                session_id,
                [
                    NewMessage(
                        session_id=session_id,
                        author_type=AuthorType.AGENT,
                        type=MessageType.CLARIFICATION_REQUEST,
                        content=question.prompt,
                        metadata=meta,
                        turn_id=turn_id,
                        requests_input=index == len(questions) - 1,
                    )
                    for index, (question, meta) in enumerate(zip(questions, metadata, strict=True))
                ],
                turn_id=turn_id,
                session_state=SessionState.WAITING_FOR_INPUT,
                deadlines=deadlines,
            )
            if written.deadline is not None:
                bundle = (
                    Bundle(pending_id, written.session, written.rows, turn_id)
                    if written.session is not None
                    else None
                )
                self._deadline_written(bundle, written.deadline)
            waiter.questions = questions_of_rows(written.rows)
            log.info(
                "clarification asked",
                extra={
                    "session_id": session_id,
                    "turn_id": turn_id,
                    "pending_id": pending_id,
                    "rows": len(written.rows),
                },
            )
            if written.session is not None:
                await self._publisher.session_state(written.session)
            await self._publisher.messages("added", written.rows)
            dropped = dropped or asyncio.Event()
            self._calls[pending_id] = dropped
            if self._stopping:
                dropped.set()
            return await self._wait(waiter, progress, dropped, expiry_notice(deadlines), span)
        except asyncio.CancelledError:
            span.set("outcome", "detached")
            log.info(
                "agent dropped the question call; detaching",
                extra={"session_id": session_id, "pending_id": pending_id},
            )
            self._close(waiter)
            await self._canceller.detach(session_id, pending_id=pending_id)
            raise
        finally:
            self._calls.pop(pending_id, None)
            self._close(waiter)

    async def _wait(
        self, waiter: Waiter, progress: Progress, dropped: asyncio.Event, notice: str, span: Span
    ) -> str:
        deadline = self._clock.monotonic() + self._limits.wait_s
        while True:
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0 or dropped.is_set():
                reason = "wait limit reached"
                if dropped.is_set():
                    reason = "server stopping" if self._stopping else "connection gone"
                log.info(
                    f"clarification {reason}; detaching",
                    extra={"session_id": waiter.session_id, "pending_id": waiter.pending_id},
                )
                # Offers still queued are withdrawn: their responders restore the claim.
                self._close(waiter)
                await self._canceller.detach(waiter.session_id, pending_id=waiter.pending_id)
                span.set("outcome", "detached")
                message = f"{DETACHED_TOOL_ERROR} {notice}" if notice else DETACHED_TOOL_ERROR
                raise QuestionDetached(message, pending_id=waiter.pending_id)
            try:
                item = await _next(
                    self._clock, waiter, dropped, min(remaining, self._limits.keepalive_s)
                )
            except TimeoutError:
                await self._keepalive(waiter, progress, notice)
                continue
            if item is None:
                continue  # dropped: detach at the top of the loop
            if isinstance(item, Cancelled):
                span.set("outcome", "cancelled")
                return json.dumps({"rejected": True, "reject_reason": "cancelled"})
            try:
                confirmed = await item.run_confirmation(self._confirmation.confirm)
            except Exception:
                log.exception(
                    "live delivery confirmation failed; still waiting",
                    extra={"session_id": waiter.session_id, "pending_id": waiter.pending_id},
                )
                confirmed = False
            if confirmed:
                # The confirmation moved the session to running and announced it.
                span.set("outcome", "rejected" if item.response.rejected else "answered")
                return tool_result_text(item.response)
            # Not confirmed: the responder restores the claim, and a retry comes back here.

    async def _keepalive(self, waiter: Waiter, progress: Progress, notice: str) -> None:
        text = "Waiting for the person's answer"
        try:
            await progress(f"{text}. {notice}" if notice else text)
        except Exception:
            log.debug("keep-alive failed", extra={"pending_id": waiter.pending_id}, exc_info=True)

    def _close(self, waiter: Waiter) -> None:
        """No new offers reach this waiter; offers already queued are withdrawn."""
        self._waiters.remove(waiter)
        while not waiter.inbox.empty():
            item = waiter.inbox.get_nowait()
            if isinstance(item, AnswerOffer):
                item.abandon()


async def _next(
    clock: Clock, waiter: Waiter, dropped: asyncio.Event, within: float
) -> AnswerOffer | Cancelled | None:
    """The next inbox item; None once `dropped` is set (an item taken meanwhile goes back so
    the detach withdraws it); TimeoutError after `within` seconds on `clock`."""
    get = asyncio.ensure_future(waiter.inbox.get())
    gone = asyncio.ensure_future(dropped.wait())
    timer = asyncio.ensure_future(clock.sleep(within))
    try:
        done, _ = await asyncio.wait({get, gone, timer}, return_when=asyncio.FIRST_COMPLETED)
        done -= {timer}
    finally:
        gone.cancel()
        timer.cancel()
        if not get.done():
            get.cancel()
    if get.done() and not get.cancelled():
        item = get.result()
        if not dropped.is_set():
            return item
        waiter.inbox.put_nowait(item)
        return None
    if not done:
        raise TimeoutError
    return None
