"""The server's own resource use, read from /proc (Linux): CPU time and resident memory.

CPU is the server process's utime + stime (`/proc/<pid>/stat` fields 14 and 15), which count
every thread of the process and none of its children (the agent subprocesses have their own).
Memory is `VmRSS` from `/proc/<pid>/status`.

`idle_memory` starts relay sessions whose simulated agents each call `ask_user_question` and
leave the question open (the tool call held, the bundle pending), and reads the server's RSS
before and after: what sessions waiting on a person cost the server while nothing happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from bench.client import finish_sessions, is_question, wait
from bench.context import Ctx, freeze_heap, progress
from bench.simulated import QUESTION, TOOL, SimulatedAgent, relay_session
from bench.waits import gather_within

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """The process's own user + system CPU seconds, children excluded."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name (field 2) may hold spaces; the rest follows its closing parenthesis.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def idle_memory(ctx: Ctx, counts: tuple[int, ...]) -> dict[int, int]:
    """Server RSS (bytes) with 0 and then each of `counts` sessions holding an open question."""
    assert ctx.server.proc is not None
    pid = ctx.server.proc.pid
    gate = asyncio.Semaphore(8)
    release = asyncio.Event()
    holders: list[asyncio.Future[None]] = []
    sessions: list[str] = []
    out = {0: rss_bytes(pid)}

    async def hold(i: int, asked: asyncio.Future[None]) -> None:
        # One task per session: the MCP client's cancel scopes must close in the task that
        # opened them.
        async with gate:
            task_id = await ctx.api.create_task(f"idle {i}")
            session_id, endpoint = await relay_session(ctx, task_id)
        sessions.append(session_id)
        async with SimulatedAgent.connect(ctx, session_id, endpoint) as agent:
            question = ctx.feed.expect(session_id, is_question)
            call = asyncio.ensure_future(agent.client.call_tool(TOOL, QUESTION))
            try:
                await wait(question)
                asked.set_result(None)
                await release.wait()
            finally:
                call.cancel()
                with contextlib.suppress(BaseException):
                    await call

    try:
        for n in counts:
            asked = [asyncio.get_running_loop().create_future() for _ in range(len(holders), n)]
            holders += [
                asyncio.ensure_future(hold(len(holders) + k, f)) for k, f in enumerate(asked)
            ]
            await gather_within(300, *asked)
            freeze_heap()
            await asyncio.sleep(1)  # let the server finish each question's follow-up work
            out[n] = rss_bytes(pid)
            progress(f"{ctx.db}: {n} sessions holding a question: RSS {out[n] / 2**20:.1f} MiB")
    finally:
        release.set()
        await asyncio.gather(*holders, return_exceptions=True)
        await finish_sessions(ctx.api, sessions)
    return out
