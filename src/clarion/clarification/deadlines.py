"""The deadline scheduler: one supervised loop that sleeps until the next deadline of this
server's questions falls due (on the injected clock). A question asked under a policy is handed
over as its transaction wrote it: announced and armed in memory, with no read.

Due deadlines come from the database, so one that fell due while the server was down fires
after the restart, and in a cluster each replica fires those of the sessions it owns (an
adopter, once it has adopted them). Each timer fires through a guarded update: a reminder moves
on from the one due, an escalation marks the question escalated once, and the expiry answers
through the respond path exactly as a person would (`Resolver.respond(..., claim=CLAIM_BY_POLICY)`),
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
from clarion.domain.lifecycle import CLAIM_BY_POLICY
from clarion.domain.models import Bundle, BundleState
from clarion.domain.questions import question_wire
from clarion.domain.waiting import expiry_body, next_reminder
from clarion.ports import AnswerStore, Clock, DeadlineRecord, DeadlineStore
from clarion.projection.events import EventPublisher

log = logging.getLogger(__name__)

# How long to wait before looking again at a question whose answer is being delivered, or
# whose expiry's answer was not delivered (it is pending again).
RETRY = timedelta(seconds=5)
_ACTIVE = (BundleState.ACTIVE_LIVE, BundleState.ACTIVE_DETACHED)


def earliest(*times: datetime | None) -> datetime | None:
    known = [t for t in times if t is not None]
    return min(known) if known else None


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
        # Questions asked under a policy since the last pass, as their asking transaction wrote
        # them: announced and armed from these, never read back.
        self._asked: list[tuple[Bundle | None, DeadlineRecord]] = []
        # Set when the database must be looked at again (sessions adopted), not only armed.
        self._look = True
        self._deadlines = deadlines
        self._answers = answers
        self._resolver = resolver
        self._waiters = waiters
        self._clock = clock
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Sessions were adopted: look for the next deadline again."""
        self._look = True
        self._wake.set()

    def asked(self, bundle: Bundle | None, deadline: DeadlineRecord) -> None:
        """A question's deadline row was committed: announce it (`bundle`: the question as
        written, None when its session ended meanwhile), and wait for it too."""
        self._asked.append((bundle, deadline))
        self._wake.set()

    async def run(self, owner: str | None) -> None:
        """Until cancelled. `owner`: this replica's id in a cluster, None for a single server.

        The database is looked at when the armed time comes, when sessions are adopted, and
        after a failed pass; a question asked meanwhile only arms an earlier time, if its row
        is due before the armed one. That is sound because nothing else moves a deadline of
        this server's earlier: the scheduler's writes (and the restore of an expiry's answer
        not delivered, inside its respond call) precede its look, and each new row is handed
        over after its commit, so the armed time is never later than a deadline due."""
        log.info("deadline scheduler running", extra={"replica": owner})
        armed: datetime | None = None
        while True:
            self._wake.clear()
            asked, self._asked = self._asked, []
            look, self._look = self._look, False
            await self._announce_asked(asked)
            try:
                if look:
                    await self.fire_due(owner)
                    armed = await self._deadlines.next_deadline_due(owner)
                armed = earliest(armed, *(deadline.next_due_at for _, deadline in asked))
            except Exception:
                log.exception("deadline scheduler pass failed; trying again later")
                self._look = True
                armed = self._clock.now() + RETRY
            if armed is None:
                await self._wake.wait()
                continue
            delay = (armed - self._clock.now()).total_seconds()
            # Due already (more than one pass takes, or it fell due meanwhile), or due once
            # the sleep ends: look then.
            if delay <= 0 or await self._sleep_or_wake(delay):
                self._look = True

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

    async def _announce_asked(self, asked: list[tuple[Bundle | None, DeadlineRecord]]) -> None:
        for bundle, deadline in asked:
            if bundle is not None:
                await self._announce_written(bundle, deadline)

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

    async def _announce_written(self, bundle: Bundle, deadline: DeadlineRecord) -> None:
        try:
            await self._publisher.waiting(bundle, deadline)
        except Exception:
            log.exception("waiting update not announced", extra={"pending_id": bundle.pending_id})

    async def _sleep_or_wake(self, seconds: float) -> bool:
        """True when the time ran out, False when woken first."""
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
        return sleep.done() and not sleep.cancelled()

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
            result = await self._resolver.respond(pending_id, body, claim=CLAIM_BY_POLICY)
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
