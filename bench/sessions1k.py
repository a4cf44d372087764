"""1,000 live sessions: every session's simulated agent holds its question open over the MCP
tool's streamable HTTP while answers arrive at a steady rate.

Each session runs the `hub` agent profile (`bench.relay_hub`: one socat process per session,
the ACP side in this process) and one MCP client here, which calls `ask_user_question`, holds
the call (its SSE stream) until the answer returns it, and asks again at once. An answerer
POSTs answers to the oldest waiting questions at `rate` per second. Read on one server:

- a window of `rate * window_s` answers with `baseline` sessions, then the same with all
  `sessions`: the server's CPU per cycle (answer, tool return, the next question asked and
  announced), each window ended once every answered session is waiting again;
- with every session waiting and no answers, the server's CPU per second over `idle_s`: what
  the keepalives (a progress notification on every open call each `keepalive_s`, Clarion's
  default 20 s) and timers cost; the clients count the keepalives they receive;
- the server's RSS with every session waiting, and its peak (VmHWM);
- dropped streams: tool calls that ended in an error or a broken stream rather than an answer.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.client import is_question, pending_id_of
from bench.context import Ctx, freeze_heap, progress
from bench.cpu_rows import gc_cpu_seconds
from bench.footprint import cpu_seconds, rss_bytes
from bench.relay_hub import hub_profile, relay_hub
from bench.server import BenchServer, fresh_database
from bench.simulated import QUESTION, TOOL, SimulatedAgent, relay_endpoint
from bench.waits import gather_within

PROFILE = "hub"
SETUP_CONCURRENCY = 8
_LIMIT_S = 600.0


@dataclass(frozen=True)
class ManySizes:
    sessions: int = 1_000
    baseline: int = 10  # the session count the per-cycle CPU is compared with
    rate: float = 20.0  # answers per second
    window_s: float = 30.0  # each CPU window posts rate * window_s answers
    idle_s: float = 60.0  # quiet with every session waiting: three keepalive rounds
    keepalive_s: float = 20.0  # Clarion's default


QUICK = ManySizes(sessions=20, baseline=4, rate=20.0, window_s=1.0, idle_s=2.0, keepalive_s=0.5)


@dataclass(frozen=True)
class Window:
    sessions: int
    cycles: int
    seconds: float
    server_cpu: float  # seconds over the window
    gc_cpu: float  # the garbage collector's share of it
    returns: tuple[float, ...]  # answer POST sent -> tool call returned, seconds

    @property
    def cpu_per_cycle(self) -> float:
        return self.server_cpu / max(self.cycles, 1)


@dataclass
class ManyResult:
    db: str
    sizes: ManySizes
    setup_s: float = 0.0
    rss_empty: int = 0
    rss_waiting: int = 0
    rss_peak: int = 0
    windows: list[Window] = field(default_factory=list)
    idle_cpu: float = 0.0  # CPU seconds per second, every session waiting
    keepalives: int = 0  # progress notifications the clients received in the idle window
    dropped: list[str] = field(default_factory=list)


class Holders:
    """Every session's MCP client, asking again as soon as its call returns."""

    def __init__(self, ctx: Ctx) -> None:
        self._ctx = ctx
        # (pending id, the future the answerer stamps when it POSTs), oldest first.
        self.waiting: asyncio.Queue[tuple[str, asyncio.Future[float]]] = asyncio.Queue()
        self.returned = 0
        self.keepalives = 0
        self.dropped: list[str] = []
        self.returns: list[float] = []
        self._stopping = False

    async def _keepalive(self, progress: float, total: float | None, message: str | None) -> None:
        self.keepalives += 1

    async def hold(self, session_id: str, endpoint: dict[str, Any], ready: asyncio.Event) -> None:
        feed = self._ctx.feed
        async with SimulatedAgent.connect(self._ctx, session_id, endpoint) as agent:
            while True:
                question = feed.expect(session_id, is_question)
                call = asyncio.ensure_future(
                    agent.client.call_tool(TOOL, QUESTION, progress_callback=self._keepalive)
                )
                try:
                    first: set[asyncio.Future[Any]] = {question, call}
                    await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
                    if not question.done():
                        self._drop(session_id, call)
                        return
                    answered: asyncio.Future[float] = asyncio.get_running_loop().create_future()
                    self.waiting.put_nowait((pending_id_of(question.result()[1]), answered))
                    ready.set()
                    await asyncio.wait({call})
                    if self._drop(session_id, call):
                        return
                    if answered.done():
                        self.returns.append(time.perf_counter() - answered.result())
                    self.returned += 1
                finally:
                    question.cancel()
                    call.cancel()

    def _drop(self, session_id: str, call: asyncio.Future[Any]) -> bool:
        """Whether the call ended otherwise than with an answer (recorded unless stopping)."""
        if self._stopping:
            return True
        if call.cancelled():
            reason = "cancelled"
        elif call.exception() is not None:
            reason = repr(call.exception())
        elif call.result().is_error:
            reason = str(call.result().content)[:200]
        else:
            return False
        self.dropped.append(f"{session_id}: {reason}")
        return True

    def stop(self) -> None:
        self._stopping = True


async def _answer_window(ctx: Ctx, holders: Holders, sessions: int, sizes: ManySizes) -> Window:
    """Post `rate * window_s` answers at the steady rate; the window ends once every answered
    session asks again."""
    assert ctx.server.proc is not None
    pid = ctx.server.proc.pid
    count = max(1, round(sizes.rate * sizes.window_s))
    returned0 = holders.returned
    returns0 = len(holders.returns)
    (gc0,) = await gc_cpu_seconds(ctx.server.url)
    cpu0, began = cpu_seconds(pid), time.perf_counter()
    posts: list[asyncio.Task[Any]] = []
    for i in range(count):
        pending_id, answered = await holders.waiting.get()
        delay = began + i / sizes.rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        answered.set_result(time.perf_counter())
        posts.append(asyncio.ensure_future(ctx.api.respond(pending_id)))
    await gather_within(_LIMIT_S, *posts)
    async with asyncio.timeout(_LIMIT_S):
        while holders.returned < returned0 + count or holders.waiting.qsize() < sessions:
            if holders.dropped:
                raise RuntimeError(f"streams dropped: {holders.dropped[:3]}")
            await asyncio.sleep(0.01)
    cpu1, ended = cpu_seconds(pid), time.perf_counter()
    (gc1,) = await gc_cpu_seconds(ctx.server.url)
    window = Window(
        sessions=sessions,
        cycles=holders.returned - returned0,
        seconds=ended - began,
        server_cpu=cpu1 - cpu0,
        gc_cpu=gc1 - gc0,
        returns=tuple(holders.returns[returns0:]),
    )
    progress(
        f"{ctx.db}: {sessions} live sessions: {window.cycles} cycles in {window.seconds:.1f} s, "
        f"server CPU {window.cpu_per_cycle * 1000:.2f} ms/cycle"
    )
    return window


async def _open(ctx: Ctx, holders: Holders, first: int, n: int) -> list[asyncio.Task[None]]:
    """Start sessions first..n-1 and their clients; returns once every one holds a question."""
    gate = asyncio.Semaphore(SETUP_CONCURRENCY)

    async def one(i: int) -> asyncio.Task[None]:
        async with gate:
            task_id = await ctx.api.create_task(f"live sessions {i}")
            session_id = await ctx.api.start_session(task_id, "hold the turn", agent=PROFILE)
            endpoint = await relay_endpoint(ctx, session_id)
            ready = asyncio.Event()
            holder = asyncio.create_task(holders.hold(session_id, endpoint, ready))
            done, _ = await asyncio.wait(
                {holder, asyncio.ensure_future(ready.wait())},
                timeout=_LIMIT_S,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if holder in done or not done:
                raise RuntimeError(f"session {session_id} never held a question")
            return holder

    return list(await gather_within(_LIMIT_S * 4, *(one(i) for i in range(first, n))))


async def measure(db: str, workdir: Path, sizes: ManySizes) -> ManyResult:
    result = ManyResult(db, sizes)
    socket_path = workdir / f"hub-{db}.sock"
    async with fresh_database(db, workdir) as url:
        server = BenchServer(
            url,
            workdir,
            extra_env={"CLARION_KEEPALIVE_S": f"{sizes.keepalive_s:g}"},
            extra_config=hub_profile(PROFILE, socket_path),
        )
        async with relay_hub(socket_path, server.relay_dir):
            await server.start()
            assert server.proc is not None
            pid = server.proc.pid
            ctx = await Ctx.connect(db, server)
            holders = Holders(ctx)
            tasks: list[asyncio.Task[None]] = []
            try:
                result.rss_empty = rss_bytes(pid)
                began = time.perf_counter()
                tasks += await _open(ctx, holders, 0, sizes.baseline)
                freeze_heap()
                result.windows.append(await _answer_window(ctx, holders, sizes.baseline, sizes))
                tasks += await _open(ctx, holders, sizes.baseline, sizes.sessions)
                result.setup_s = time.perf_counter() - began
                progress(f"{db}: {sizes.sessions} sessions hold a question")
                freeze_heap()
                result.windows.append(await _answer_window(ctx, holders, sizes.sessions, sizes))
                keepalives0 = holders.keepalives
                cpu0 = cpu_seconds(pid)
                await asyncio.sleep(sizes.idle_s)
                result.idle_cpu = (cpu_seconds(pid) - cpu0) / sizes.idle_s
                result.keepalives = holders.keepalives - keepalives0
                result.rss_waiting = rss_bytes(pid)
                result.rss_peak = _peak_rss(pid)
                result.dropped = list(holders.dropped)
            finally:
                holders.stop()
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                await ctx.close()
                server.stop()
    return result


def _peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0
