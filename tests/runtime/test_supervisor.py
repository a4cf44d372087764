"""The supervisor: work that finishes despite a cancelled caller, failures that stay with their
awaiter, and no coroutine left un-awaited when work is refused or cancelled before it ran."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from clarion.runtime.supervisor import Supervisor


async def _value(v: int) -> int:
    await asyncio.sleep(0)
    return v


async def test_shielded_work_finishes_although_its_caller_is_cancelled() -> None:
    finished = asyncio.Event()
    release = asyncio.Event()

    async def work() -> int:
        await release.wait()
        finished.set()
        return 7

    async with Supervisor() as supervisor:
        caller = asyncio.ensure_future(supervisor.run_shielded(work()))
        await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        release.set()
        await asyncio.wait_for(finished.wait(), 10)


async def test_a_failure_reaches_its_awaiter_and_spares_its_siblings() -> None:
    async def boom() -> int:
        raise ValueError("boom")

    async with Supervisor() as supervisor:
        sibling = supervisor.spawn(_value(1))
        with pytest.raises(ValueError, match="boom"):
            await supervisor.spawn(boom())
        assert await sibling == 1


def _never_awaited(caught: list[warnings.WarningMessage]) -> list[str]:
    gc.collect()
    return [str(w.message) for w in caught if "was never awaited" in str(w.message)]


async def test_work_refused_after_shutdown_closes_its_coroutine() -> None:
    supervisor = Supervisor()
    async with supervisor:
        pass
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="not running"):
            supervisor.spawn(_value(1))
        assert _never_awaited(caught) == []


async def test_work_cancelled_before_it_started_closes_its_coroutine() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with Supervisor() as supervisor:
            # Shut down before the task's first step: the work never starts.
            pending = supervisor.spawn(_value(1))
        assert pending.cancelled()
        assert _never_awaited(caught) == []
