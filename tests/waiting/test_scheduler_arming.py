"""The deadline scheduler and a question just asked under a policy: it announces the question
from the rows its asking transaction wrote and arms its timer in memory, so the ask costs the
scheduler no read; the database is looked at only when the armed time comes (or sessions are
adopted). A store that counts its reads and a manual clock show both."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from clarion.clarification.deadlines import DeadlineScheduler
from clarion.clarification.resolver import Resolver
from clarion.clarification.waiters import LiveWaiters
from clarion.domain.models import Bundle
from clarion.domain.waiting import Deadlines, OnExpiry
from clarion.ports import AnswerStore, DeadlineRecord, DeadlineStore
from clarion.projection.events import EventPublisher
from clarion.runtime.clock import ManualClock

START = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _deadline(pending_id: str, due: datetime) -> DeadlineRecord:
    return DeadlineRecord(
        pending_id=pending_id,
        session_id="s",
        task_id="t",
        deadlines=Deadlines(
            waiting_since=START,
            remind_every=None,
            remind_at=due,
            escalate_at=None,
            escalate_to=(),
            expire_at=None,
            expire_after=None,
            on_expiry=OnExpiry.KEEP,
        ),
        reminders=0,
        escalated_at=None,
        expired_at=None,
        scheduled_expiry=None,
        next_due_at=due,
    )


class CountingStore:
    """The scheduler's reads, counted; one deadline already waits, due at `stored_due`."""

    def __init__(self, stored_due: datetime) -> None:
        self.stored_due: datetime | None = stored_due
        self.reads: list[str] = []
        self.looked = asyncio.Event()

    async def next_deadline_due(self, owner: str | None) -> datetime | None:
        self.reads.append("next_deadline_due")
        return self.stored_due

    async def due_deadlines(
        self, owner: str | None, now: datetime, limit: int = 50
    ) -> list[DeadlineRecord]:
        self.reads.append(f"due_deadlines at {now - START}")
        self.looked.set()
        if self.stored_due is not None and self.stored_due <= now:
            self.stored_due = None  # fired: nothing of it is due any more
        return []

    async def find_deadlines(self, pending_ids: Sequence[str]) -> dict[str, DeadlineRecord]:
        self.reads.append("find_deadlines")
        return {}

    async def find_bundle(self, pending_id: str) -> Bundle | None:
        self.reads.append("find_bundle")
        return None


class Announcements:
    def __init__(self) -> None:
        self.sent: list[tuple[Bundle, DeadlineRecord | None]] = []
        self.changed = asyncio.Event()

    async def waiting(self, bundle: Bundle, record: DeadlineRecord | None) -> None:
        self.sent.append((bundle, record))
        self.changed.set()


@contextlib.asynccontextmanager
async def running(
    store: CountingStore, clock: ManualClock, announcements: Announcements
) -> AsyncIterator[DeadlineScheduler]:
    scheduler = DeadlineScheduler(
        deadlines=cast(DeadlineStore, store),
        answers=cast(AnswerStore, store),
        resolver=cast(Resolver, None),
        waiters=LiveWaiters(),
        clock=clock,
        publisher=cast(EventPublisher, announcements),
    )
    task = asyncio.create_task(scheduler.run(None))
    try:
        yield scheduler
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _asleep(clock: ManualClock) -> None:
    await asyncio.wait_for(clock.wait_for_sleepers(), 60)


async def test_an_asked_question_is_announced_from_its_written_rows_without_a_read() -> None:
    clock = ManualClock(START)
    store = CountingStore(stored_due=START + HOUR)
    announcements = Announcements()
    async with running(store, clock, announcements) as scheduler:
        await _asleep(clock)
        assert store.reads == ["due_deadlines at 0:00:00", "next_deadline_due"]

        bundle: Any = object()  # handed through untouched
        deadline = _deadline("later", START + 2 * HOUR)
        scheduler.asked(bundle, deadline)
        await asyncio.wait_for(announcements.changed.wait(), 60)
        await _asleep(clock)

        assert announcements.sent == [(bundle, deadline)]
        assert store.reads == ["due_deadlines at 0:00:00", "next_deadline_due"], (
            "neither the announcement nor the re-arm read the database"
        )

        # The stored deadline is still the one armed: the database is looked at when it is due.
        store.looked.clear()
        clock.advance(HOUR.total_seconds())
        await asyncio.wait_for(store.looked.wait(), 60)
        assert store.reads[2] == "due_deadlines at 1:00:00"


async def test_a_question_due_before_the_armed_time_is_looked_at_when_it_is_due() -> None:
    clock = ManualClock(START)
    store = CountingStore(stored_due=START + 8 * HOUR)
    announcements = Announcements()
    async with running(store, clock, announcements) as scheduler:
        await _asleep(clock)
        store.looked.clear()

        scheduler.asked(cast(Bundle, object()), _deadline("sooner", START + HOUR / 2))
        await asyncio.wait_for(announcements.changed.wait(), 60)
        await _asleep(clock)
        assert not store.looked.is_set()

        clock.advance((HOUR / 2).total_seconds())
        await asyncio.wait_for(store.looked.wait(), 60)
        assert store.reads[2] == "due_deadlines at 0:30:00", "armed at the new, earlier time"


async def test_adopted_sessions_make_the_scheduler_look_again_at_once() -> None:
    clock = ManualClock(START)
    store = CountingStore(stored_due=START + 8 * HOUR)
    async with running(store, clock, Announcements()) as scheduler:
        await _asleep(clock)
        store.looked.clear()

        scheduler.wake()
        await asyncio.wait_for(store.looked.wait(), 60)
        assert store.reads[2] == "due_deadlines at 0:00:00"


async def test_a_question_whose_session_ended_is_armed_but_not_announced() -> None:
    clock = ManualClock(START)
    store = CountingStore(stored_due=START + 8 * HOUR)
    announcements = Announcements()
    async with running(store, clock, announcements) as scheduler:
        await _asleep(clock)
        store.looked.clear()

        scheduler.asked(None, _deadline("ended", START + HOUR))
        clock.advance(HOUR.total_seconds())
        await asyncio.wait_for(store.looked.wait(), 60)
        assert announcements.sent == []
        assert store.reads[2] == "due_deadlines at 1:00:00"
