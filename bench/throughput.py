"""Throughput: complete ask -> answer -> resume cycles per second with N concurrent sessions.

`mcp_cycles_per_second` (the issue's measurement): agents simulated by MCP clients. Each session
runs the relay agent (`bench.relay_agent`, which holds the turn open) and one benchmark worker
with its own MCP client; a cycle is: call `ask_user_question` -> the question's
`session.message.added` notification -> POST the answer (200) -> the tool call returns the
answer. `cycles_per_second`: full turns through the builtin agent (one subprocess per session):
POST a `/scenario ask` prompt -> question notification -> POST the answer (200) -> the agent's
`You answered: ...` notification -> `session.turn.completed`.

Workers start new cycles for `duration` seconds; the figure is completed cycles divided by the
time from the start until the last cycle finished. Agent start-up and one warm-up cycle per
session are not timed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bench import agent_procs
from bench.agent_procs import Agent, AgentProcesses
from bench.client import api_bases, ask_and_wait, finish_sessions, new_asking_session
from bench.context import Ctx, freeze_heap, progress
from bench.footprint import cpu_seconds
from bench.latency import answer_live
from bench.simulated import relay_session
from bench.waits import gather_within

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
    freeze_heap()
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

    await gather_within(duration + 120, *(worker(s) for s in sessions))
    elapsed = max(last - began, 1e-9)
    progress(f"{ctx.db}: throughput, {n} sessions: {done} cycles in {elapsed:.1f}s")
    await finish_sessions(ctx.api, sessions)
    return done / elapsed, done


@dataclass(frozen=True)
class McpThroughput:
    rate: float  # cycles per second
    cycles: int
    server_cpu_per_cycle: float  # seconds of the server process's own CPU (children excluded)
    client_cpu_per_cycle: float  # seconds of this benchmark process's CPU
    # Per server process measured (the `pids` given, in order); their sum is the figure above.
    process_cpu_per_cycle: tuple[float, ...] = ()
    # The `counters` given, their growth over the window per cycle (in their order).
    counted_per_cycle: tuple[float, ...] = ()


async def mcp_cycles_per_second(
    ctx: Ctx,
    n: int,
    duration: float,
    *,
    pids: Sequence[int] = (),
    processes: int = agent_procs.PROCESSES,
    counters: Callable[[], Awaitable[tuple[float, ...]]] | None = None,
    settle: Callable[[int], Awaitable[None]] | None = None,
    warmup_s: float = 0.0,
) -> McpThroughput:
    """Cycles per second with `n` simulated MCP agents, and the CPU each cycle cost the server
    and the benchmark client (process CPU time from the start signal to the last cycle).

    The agents run in `processes` worker processes (`bench.agent_procs`), so that at 100
    sessions the client is not the bound. Every HTTP request (sessions started, answers POSTed)
    goes through `ctx.api` or, in the workers, through the same servers in the same way (a
    cluster's replicas in turn, `bench.cluster`); the agents' MCP calls go to the URL their
    session was given. `pids`: the server processes whose CPU is counted (default: the one
    `ctx.server`). The client figure is the workers' CPU together. `counters`: read at the
    window's start and end like the CPU (NATS deliveries, say), reported per cycle. `settle`:
    awaited before the window's CPU is first read and again before it is last read, with the
    cycles completed so far (each agent's warm-up cycle included), to wait for work the cycles
    left behind them (an outbox's messages): what the warm-ups queued stays out of the window,
    and what the window's cycles queued is in it. `warmup_s`: the same agents first cycle this
    long, uncounted, so that the window starts on a server already carrying its load (pool
    connections open, statements prepared, heap grown) without a second set of sessions."""
    gate = asyncio.Semaphore(SPAWN_CONCURRENCY)

    async def relay(i: int) -> Agent:
        async with gate:
            task_id = await ctx.api.create_task(f"throughput (MCP) {n}/{i}")
            session_id, endpoint = await relay_session(ctx, task_id)
            return Agent(session_id, task_id, endpoint)

    agents = list(await asyncio.gather(*(relay(i) for i in range(n))))
    if not pids:
        assert ctx.server.proc is not None
        pids = (ctx.server.proc.pid,)

    def server_cpu() -> tuple[float, ...]:
        return tuple(cpu_seconds(pid) for pid in pids)

    # The benchmark's own feed waits for nothing here: parked on a quiet task, it is not sent
    # every cycle's notifications a second time.
    await ctx.feed.only_tasks([await ctx.api.create_task("throughput (MCP): feed parked")])
    try:
        async with AgentProcesses.start(
            api_bases(ctx.api),
            ctx.server.ws_url,
            agents,
            processes,
            follow_redirects=ctx.api.http.follow_redirects,
        ) as workers:
            warm = 0
            if warmup_s > 0:
                workers.go(warmup_s, more=True)
                warm = sum(r.cycles for r in await workers.results())
            freeze_heap()
            progress(
                f"{ctx.db}: throughput (MCP), {n} sessions ready in "
                f"{min(processes, n)} processes; measuring for {duration:g}s"
            )
            if settle is not None:
                await settle(n + warm)
            counted0 = await counters() if counters is not None else ()
            server_cpu0 = server_cpu()
            began = time.monotonic()
            workers.go(duration)
            results = await workers.results()
            if settle is not None:
                await settle(n + warm + sum(r.cycles for r in results))
            server_cpu1 = server_cpu()
            counted1 = await counters() if counters is not None else ()
    finally:
        await ctx.feed.only_tasks([])
    done = sum(r.cycles for r in results)
    elapsed = max(max(r.last for r in results) - began, 1e-9)
    cycles = max(done, 1)
    per_process = tuple(
        (at - at0) / cycles for at, at0 in zip(server_cpu1, server_cpu0, strict=True)
    )
    result = McpThroughput(
        rate=done / elapsed,
        cycles=done,
        server_cpu_per_cycle=sum(per_process),
        client_cpu_per_cycle=sum(r.cpu for r in results) / cycles,
        process_cpu_per_cycle=per_process,
        counted_per_cycle=tuple(
            (at - at0) / cycles for at, at0 in zip(counted1, counted0, strict=True)
        ),
    )
    progress(
        f"{ctx.db}: throughput (MCP), {n} sessions: {done} cycles in {elapsed:.1f}s, "
        f"server CPU {result.server_cpu_per_cycle * 1000:.2f} ms/cycle, "
        f"client {result.client_cpu_per_cycle * 1000:.2f} ms/cycle"
    )
    await finish_sessions(ctx.api, [a.session_id for a in agents])
    return result
