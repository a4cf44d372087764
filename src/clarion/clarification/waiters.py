"""Live waiters: the in-memory side of an `ask_user_question` call that is still waiting.

A waiter exists only while the agent's tool call is open in this process. A responder offers
it an `AnswerOffer` (the claimed response); the waiter confirms it durably
(live_confirmation.py) *before* it returns the answer to the agent, so the agent never sees an
answer that is not durable, and the responder only waits for the outcome. Whoever moves an
offer out of `OFFERED` first owns it: the waiter by starting the confirmation, the responder by
abandoning it after its bounded wait. That is the in-process half of the serialization; the
guarded UPDATEs in the store are the durable half.

Imported by the clarification services and the MCP edge.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum

from clarion.domain.models import ClarificationResponse, Question
from clarion.ports import ClaimResult, Written
from clarion.ports.tracing import Carrier, no_context

log = logging.getLogger(__name__)


class OfferState(StrEnum):
    OFFERED = "offered"
    CONFIRMING = "confirming"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    ABANDONED = "abandoned"


@dataclass(eq=False)
class AnswerOffer:
    """One claimed response offered to one waiter. The waiter makes it durable; the
    responder that offered it only waits for `settled` and reads the outcome (`state`, and
    `written`, what the confirmation wrote): it is never called back."""

    response: ClarificationResponse
    claim: ClaimResult
    state: OfferState = OfferState.OFFERED
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    written: Written | None = None
    # The responder's trace context: the confirmation, in the waiter's task, continues it.
    trace: Carrier = field(default_factory=no_context)

    def abandon(self) -> bool:
        """Responder side: withdraw an offer nobody started confirming. True if withdrawn."""
        if self.state is OfferState.OFFERED:
            self.state = OfferState.ABANDONED
            self.settled.set()
            return True
        return False

    async def run_confirmation(self, confirm: Confirm) -> bool:
        """Waiter side: confirm durably with the waiter's own `confirm`, unless the responder
        withdrew the offer first."""
        if self.state is not OfferState.OFFERED:
            return False
        self.state = OfferState.CONFIRMING
        try:
            self.written = await confirm(self)
        except BaseException:
            self.state = OfferState.FAILED
            self.settled.set()
            raise
        ok = self.written is not None
        self.state = OfferState.CONFIRMED if ok else OfferState.FAILED
        self.settled.set()
        return ok


Confirm = Callable[[AnswerOffer], Awaitable[Written | None]]
"""The waiter's durable confirmation of an offer (clarification/live_confirmation.py)."""


class Cancelled:
    """Sentinel outcome: the bundle was cancelled through the low-level cancel route."""


@dataclass(eq=False)
class Waiter:
    pending_id: str
    session_id: str
    turn_id: str
    inbox: asyncio.Queue[AnswerOffer | Cancelled] = field(default_factory=asyncio.Queue)
    closed: bool = False
    # The questions its rows carry, once they are written: a respond validates an answer
    # against them without reading the bundle (the claim decides whether it is still active).
    questions: tuple[Question, ...] | None = None


class LiveWaiters:
    """Registry of open tool calls by pending id. Single event loop; no locks needed."""

    def __init__(self) -> None:
        self._by_pending: dict[str, Waiter] = {}

    def register(self, pending_id: str, session_id: str, turn_id: str) -> Waiter:
        waiter = Waiter(pending_id=pending_id, session_id=session_id, turn_id=turn_id)
        self._by_pending[pending_id] = waiter
        return waiter

    def remove(self, waiter: Waiter) -> None:
        waiter.closed = True
        if self._by_pending.get(waiter.pending_id) is waiter:
            del self._by_pending[waiter.pending_id]

    def find(self, pending_id: str) -> Waiter | None:
        waiter = self._by_pending.get(pending_id)
        return None if waiter is None or waiter.closed else waiter

    def has(self, pending_id: str) -> bool:
        return self.find(pending_id) is not None

    def questions(self, pending_id: str) -> tuple[Question, ...] | None:
        """The questions of a bundle a live waiter holds, once its rows are written."""
        waiter = self.find(pending_id)
        return None if waiter is None else waiter.questions

    def for_session(self, session_id: str) -> list[Waiter]:
        return [w for w in self._by_pending.values() if w.session_id == session_id]

    def offer(self, pending_id: str, offer: AnswerOffer) -> bool:
        waiter = self.find(pending_id)
        if waiter is None:
            return False
        waiter.inbox.put_nowait(offer)
        return True

    def cancel(self, pending_id: str) -> bool:
        waiter = self.find(pending_id)
        if waiter is None:
            return False
        waiter.inbox.put_nowait(Cancelled())
        return True
