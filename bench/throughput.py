"""Throughput: complete ask -> answer -> resume cycles per second with N concurrent sessions.

Each session runs the builtin agent (one subprocess per session, as in production) and one
benchmark worker. A cycle is: POST a `/scenario ask` prompt -> the question's
`session.message.added` notification -> POST the answer (200) -> the agent's
`You answered: ...` notification -> `session.turn.completed`. Workers start new cycles for
`duration` seconds; the figure is completed cycles divided by the time from the start until
the last cycle finished. Agent start-up and one warm-up cycle per session are not timed.
"""

from __future__ import annotations

import asyncio
import time

from bench.client import ask_and_wait, new_asking_session
from bench.context import Ctx, progress
from bench.latency import answer_live

SPAWN_CONCURRENCY = 8


async def _start(ctx: Ctx, n: int) -> list[str]:
    gate = asyncio.Semaphore(SPAWN_CONCURRENCY)

    async def one(i: int) -> str:
        async with gate:
            task_id = await ctx.api.create_task(f"throughput {n}/{i}")
            session_id, pending_id = await new_asking_session(ctx.api, ctx.feed, task_id)
            await answer_live(ctx, session_id, pending_id)  # warm-up cycle
            return session_id

    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def cycles_per_second(ctx: Ctx, n: int, duration: float) -> tuple[float, int]:
    """Returns (cycles per second, cycles completed)."""
    sessions = await _start(ctx, n)
    progress(f"{ctx.db}: throughput, {n} sessions ready; measuring for {duration:g}s")
    began = time.perf_counter()
    stop_at = began + duration
    done = 0
    last = began

    async def worker(session_id: str) -> None:
        nonlocal done, last
        while time.perf_counter() < stop_at:
            pending_id = await ask_and_wait(ctx.api, ctx.feed, session_id)
            await answer_live(ctx, session_id, pending_id)
            done += 1
            last = time.perf_counter()

    await asyncio.wait_for(asyncio.gather(*(worker(s) for s in sessions)), duration + 120)
    elapsed = max(last - began, 1e-9)
    progress(f"{ctx.db}: throughput, {n} sessions: {done} cycles in {elapsed:.1f}s")
    await _finish(ctx, sessions)
    return done / elapsed, done


async def _finish(ctx: Ctx, sessions: list[str]) -> None:
    """End the sessions so their agent processes exit before the next measurement."""
    gate = asyncio.Semaphore(SPAWN_CONCURRENCY)

    async def one(session_id: str) -> None:
        async with gate:
            await ctx.api.ok(
                "POST", f"/task-sessions/{session_id}/finish", json={"state": "completed"}
            )

    await asyncio.gather(*(one(s) for s in sessions))
