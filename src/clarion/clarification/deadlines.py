"""The deadline scheduler: one supervised loop that sleeps until the next deadline of this
server's questions falls due (on the injected clock), and is woken when a new one is written.

Due deadlines come from the database, so one that fell due while the server was down fires
after the restart, and in a cluster each replica fires those of the sessions it owns (an
adopter, once it has adopted them). Each timer fires through a guarded update: a reminder moves
on from the one due, an escalation marks the question escalated once, and the expiry answers
through the respond path exactly as a person would (`Resolver.respond(..., by_policy=True)`),
whose claim also claims the expiry, so a person's answer and the expiry never both win.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from clarion.clarification.resolver import Resolver
from clarion.clarification.waiters import LiveWaiters
from clarion.domain.bundles import bundle_state, questions_of
from clarion.domain.errors import NotActive, NotFound, RetryableFailure
from clarion.domain.models import BundleState
from clarion.domain.questions import question_wire
from clarion.domain.waiting import expiry_body, next_reminder
from clarion.ports import AnswerStore, Clock, DeadlineRecord, DeadlineStore
from clarion.projection.events import EventPublisher

log = logging.getLogger(__name__)

# How long to wait before looking again at a question whose answer is being delivered, or
# whose expiry's answer was not delivered (it is pending again).
RETRY = timedelta(seconds=5)
_ACTIVE = (BundleState.ACTIVE_LIVE, BundleState.ACTIVE_DETACHED)


class DeadlineScheduler:
    def __init__(
        self,
        *,
        deadlines: DeadlineStore,
        answers: AnswerStore,
        resolver: Resolver,
        waiters: LiveWaiters,
        clock: Clock,
        publisher: EventPublisher,
    ) -> None:
        self._publisher = publisher
        # Questions asked under a policy since the last pass, to announce (off the asker's way).
        self._asked: set[str] = set()
        self._deadlines = deadlines
        self._answers = answers
        self._resolver = resolver
        self._waiters = waiters
        self._clock = clock
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Sessions were adopted: look for the next deadline again."""
        self._wake.set()

    def asked(self, pending_id: str) -> None:
        """A question's deadlines were written: announce them, and wait for them too."""
        self._asked.add(pending_id)
        self._wake.set()

    async def run(self, owner: str | None) -> None:
        """Until cancelled. `owner`: this replica's id in a cluster, None for a single server."""
        log.info("deadline scheduler running", extra={"replica": owner})
        while True:
            self._wake.clear()
            try:
                await self._announce_asked()
                await self.fire_due(owner)
                due = await self._deadlines.next_deadline_due(owner)
            except Exception:
                log.exception("deadline scheduler pass failed; trying again later")
                due = self._clock.now() + RETRY
            if due is None:
                await self._wake.wait()
                continue
            delay = (due - self._clock.now()).total_seconds()
            if delay <= 0:
                continue  # due already: more than one pass takes, or it fell due meanwhile
            await self._sleep_or_wake(delay)

    async def fire_due(self, owner: str | None) -> int:
        """Fire every deadline due now; returns how many questions it looked at."""
        now = self._clock.now()
        due = await self._deadlines.due_deadlines(owner, now)
        for record in due:
            try:
                if await self._fire(record, now):
                    await self._announce(record.pending_id)
            except Exception:
                log.exception("deadline not fired", extra={"pending_id": record.pending_id})
                await self._deadlines.postpone_deadlines(record.pending_id, now + RETRY)
        return len(due)

    async def _announce_asked(self) -> None:
        asked, self._asked = self._asked, set()
        for pending_id in sorted(asked):
            await self._announce(pending_id)

    async def _announce(self, pending_id: str) -> None:
        """Clients learn what the question now shows (its deadlines, escalation, answer)."""
        try:
            bundle = await self._answers.find_bundle(pending_id)
            if bundle is None:
                return
            record = (await self._deadlines.find_deadlines([pending_id])).get(pending_id)
            await self._publisher.waiting(bundle, record)
        except Exception:
            log.exception("waiting update not announced", extra={"pending_id": pending_id})

    async def _sleep_or_wake(self, seconds: float) -> None:
        # The wake-up time is fixed now: time that passes before the sleep starts counts.
        until = self._clock.monotonic() + seconds

        async def sleep_until() -> None:
            await self._clock.sleep(until - self._clock.monotonic())

        sleep = asyncio.ensure_future(sleep_until())
        woken = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleep, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            woken.cancel()

    async def _fire(self, record: DeadlineRecord, now: datetime) -> bool:
        """Fire what is due; True when something the question shows changed."""
        pending_id = record.pending_id
        bundle = await self._answers.find_bundle(pending_id)
        if bundle is None:
            await self._deadlines.retire_deadlines(pending_id)
            return False
        state = bundle_state(bundle, has_live_waiter=self._waiters.has(pending_id))
        if state is BundleState.DELIVERY_CLAIMED:
            await self._deadlines.postpone_deadlines(pending_id, now + RETRY)
            return False
        if state not in _ACTIVE:
            await self._deadlines.retire_deadlines(pending_id)
            return False
        due = record.deadlines
        questions = questions_of(bundle)
        if due.expire_at is not None and due.expire_at <= now:
            return await self._expire(record, expiry_body(due, questions), now)
        wire = [question_wire(q) for q in questions]
        acted = False
        if due.escalate_at is not None and due.escalate_at <= now:
            acted = await self._deadlines.record_escalation(record, wire) or acted
        if due.remind_at is not None and due.remind_at <= now:
            remind_next = next_reminder(due, now)
            acted = await self._deadlines.record_reminder(record, remind_next, wire) or acted
        if not acted and due.next_due is not None:
            # Due by its row but by none of its timers (written on a clock ahead of this
            # one): look again when its first timer is due, rather than at once.
            await self._deadlines.postpone_deadlines(pending_id, max(due.next_due, now + RETRY))
        return acted

    async def _expire(self, record: DeadlineRecord, body: dict[str, object], now: datetime) -> bool:
        pending_id = record.pending_id
        try:
            result = await self._resolver.respond(pending_id, body, by_policy=True)
        except (NotActive, NotFound) as exc:
            # A person (or a cancellation) won: the question no longer waits.
            log.info(
                "expiry lost to an earlier response",
                extra={"pending_id": pending_id, "reason": type(exc).__name__},
            )
            if getattr(exc, "state", None) == BundleState.DELIVERY_CLAIMED.value:
                await self._deadlines.postpone_deadlines(pending_id, now + RETRY)
            else:
                await self._deadlines.retire_deadlines(pending_id)
            return False
        except RetryableFailure:
            log.warning("expiry answer not delivered; retrying", extra={"pending_id": pending_id})
            await self._deadlines.reopen_expiry(pending_id, now + RETRY)
            return False
        log.info(
            "clarification expired",
            extra={
                "pending_id": pending_id,
                "session_id": record.session_id,
                "status": "rejected" if result.response.rejected else "answered",
                "resumed": result.resumed,
            },
        )
        return True
