"""A bench run cancelled at its ceiling leaves no gather for the garbage collector to report
("_GatheringFuture exception was never retrieved ... CancelledError", which a later test of
the same process then logged as a crash)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from bench.waits import gather_within


async def _reports_after(cancelled: asyncio.Future[Any]) -> list[str]:
    """What the loop's exception handler is told once `cancelled` is done and collected."""
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: reported.append(str(context["message"])))
    try:
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        del cancelled
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    return reported


async def test_a_gather_cancelled_under_its_ceiling_is_retrieved() -> None:
    loop = asyncio.get_running_loop()
    waiting = [loop.create_future() for _ in range(2)]
    run = asyncio.ensure_future(gather_within(300, *waiting))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not run.done()
    run.cancel()  # as a smoke run's ceiling cancels it
    assert await _reports_after(run) == []
    assert all(w.cancelled() for w in waiting)


async def test_a_gather_past_its_ceiling_raises_timeout_and_is_retrieved() -> None:
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    loop.set_exception_handler(lambda _, context: reported.append(str(context["message"])))
    try:
        with pytest.raises(TimeoutError):
            await gather_within(0.01, loop.create_future())
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert reported == []


async def test_a_gather_within_its_ceiling_returns_every_result() -> None:
    async def value(v: int) -> int:
        return v

    assert await gather_within(5, value(1), value(2)) == [1, 2]
