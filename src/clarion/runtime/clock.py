"""Clocks: wall time, monotonic time and sleeping, from the system or moved by a test.

Every timer in the services (the asker's wait limit and keep-alives, the primary-answer
watchdog) sleeps through its clock, so tests move time with `ManualClock.advance` instead of
sleeping and hoping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Timers(Protocol):
    def monotonic(self) -> float: ...
    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class ManualClock:
    """A clock that moves only when told; `advance` wakes the sleepers it reaches."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._changed: asyncio.Event | None = None

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._order), wake))
        self._signal()
        await wake

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline it reached (they run at
        the caller's next await)."""
        self._now += timedelta(seconds=seconds)
        self._mono += seconds
        while self._sleepers and self._sleepers[0][0] <= self._mono:
            _, _, wake = heapq.heappop(self._sleepers)
            if not wake.done():
                wake.set_result(None)

    @property
    def sleepers(self) -> int:
        """How many sleeps are waiting (cancelled ones drop out)."""
        self._sleepers = [s for s in self._sleepers if not s[2].done()]
        heapq.heapify(self._sleepers)
        return len(self._sleepers)

    async def wait_for_sleepers(self, count: int = 1) -> None:
        """Until at least `count` sleeps wait: the point where advancing time has an effect."""
        while self.sleepers < count:
            self._changed = asyncio.Event()
            await self._changed.wait()

    def _signal(self) -> None:
        if self._changed is not None:
            self._changed.set()
