"""Idle agents: what sessions waiting on a person cost before and after their agents stop.

N sessions on one server, each with the built-in agent (a real subprocess) holding a detached
question (`/scenario ask-timeout t=2`: the agent's own MCP client gives up, the question stays
open, the turn ends). The profile's `agent_idle_stop_after` is set just above the time the
set-up takes, so every agent runs when the first figure is read:

- the total RSS of the server and its agents (every process below the server) while the agents
  run, and again once every agent was stopped for idleness;
- the server's CPU per second of wall time while nothing happens, after the stop;
- answer POST -> 200 `resumed` for a session whose agent was stopped: the answer starts the
  agent again (`session/load`) before the resume, so this is the cost of the restart.

Per-agent RSS is printed so a larger N (the issue asks for 1,000) can be projected.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.client import Api, ask_timeout
from bench.context import Ctx, progress
from bench.footprint import cpu_seconds, rss_bytes
from bench.server import BenchServer, fresh_database

# Seconds the set-up may take per session before the first agent could idle out, on top of a
# fixed margin: the stop must come after every agent is running and measured.
_SETUP_S_PER_SESSION = 2.0
_SETUP_MARGIN_S = 30.0
IDLE_CPU_WINDOW_S = 10.0


@dataclass
class IdleAgents:
    sessions: int
    idle_stop_s: int
    server_before: int = 0
    # RSS of each process below the server: each agent and the guard shell of its group.
    agents_before: list[int] = field(default_factory=list)
    running_before: int = 0  # sessions whose agent ran when the "before" figures were read
    server_after: int = 0
    agents_after: list[int] = field(default_factory=list)
    idle_cpu: float = 0.0  # server CPU seconds per wall second, after the stop
    restarts: list[float] = field(default_factory=list)  # answer -> resumed 200, seconds

    @property
    def total_before(self) -> int:
        return self.server_before + sum(self.agents_before)

    @property
    def total_after(self) -> int:
        return self.server_after + sum(self.agents_after)

    @property
    def per_session(self) -> float:
        """What one session's running agent costs: its processes' RSS, guard included."""
        return sum(self.agents_before) / max(1, self.running_before)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (its agents, and anything they started)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children.get(child, [])
    return found


def _rss_of(pids: list[int]) -> list[int]:
    sizes: list[int] = []
    for pid in pids:
        try:
            sizes.append(rss_bytes(pid))
        except (OSError, RuntimeError):
            continue  # exited meanwhile, or a zombie with no memory left
    return sizes


async def _detached_session(api: Api, i: int) -> tuple[str, str]:
    """A session whose built-in agent asked and whose question detached: (session, pending).

    Under load the agent's MCP client can give up before its call reaches the server: the turn
    then ends without a question, and the prompt is sent again."""
    task_id = await api.create_task(f"idle agent {i}")
    session_id = await api.start_session(task_id, ask_timeout(2))
    prompts = 1
    deadline = time.perf_counter() + 600
    while time.perf_counter() < deadline:
        page = await api.ok("GET", f"/task-sessions/{session_id}/messages?limit=100")
        asked = [m for m in page["messages"] if m["type"] == "clarification_request"]
        ended = sum("No answer yet" in str(m["content"]) for m in page["messages"])
        if asked and ended:
            return session_id, str(asked[0]["metadata"]["pending_id"])
        if ended >= prompts and not asked and prompts < 5:
            await api.prompt(session_id, ask_timeout(2))
            prompts += 1
        await asyncio.sleep(0.5)
    raise RuntimeError(f"session {session_id} never left a detached question")


async def _running(api: Api, session_ids: list[str]) -> int:
    reads = [await api.ok("GET", f"/task-sessions/{s}") for s in session_ids]
    return sum(r["session"]["agent_process"] == "running" for r in reads)


async def _all_stopped(api: Api, session_ids: list[str], limit_s: float) -> None:
    deadline = time.perf_counter() + limit_s
    left = list(session_ids)
    while left:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{len(left)} agents still running after {limit_s:.0f} s")
        await asyncio.sleep(1.0)
        reads = [await api.ok("GET", f"/task-sessions/{s}") for s in left]
        left = [r["session"]["id"] for r in reads if r["session"]["agent_process"] != "stopped"]


async def _processes_gone(pid: int, limit_s: float) -> None:
    """Until no process is left below the server (a stopped agent reads `stopped` at once, its
    process takes a moment to exit), or `limit_s` passed: then what is left is measured."""
    for _ in range(int(limit_s / 0.25)):
        if not descendants(pid):
            break
        await asyncio.sleep(0.25)
    await asyncio.sleep(1)  # the server's own follow-up work


async def measure(
    db: str, workdir: Path, sessions: int, answers: int, idle_stop_s: int | None = None
) -> IdleAgents:
    """`idle_stop_s`: the profile's `agent_idle_stop_after`; by default a margin over the
    set-up's usual length. A set-up longer than it (a loaded host) lets the first agents stop
    before the "running" figures are read: they report how many ran then."""
    if idle_stop_s is None:
        idle_stop_s = int(_SETUP_MARGIN_S + _SETUP_S_PER_SESSION * sessions)
    result = IdleAgents(sessions=sessions, idle_stop_s=idle_stop_s)
    async with fresh_database(db, workdir) as url:
        server = BenchServer(
            url,
            workdir,
            extra_config=f'[agents.builtin]\nagent_idle_stop_after = "{idle_stop_s}s"\n',
        )
        await server.start()
        assert server.proc is not None
        pid = server.proc.pid
        ctx = await Ctx.connect(db, server)
        try:
            gate = asyncio.Semaphore(8)

            async def one(i: int) -> tuple[str, str]:
                async with gate:
                    return await _detached_session(ctx.api, i)

            began = time.perf_counter()
            held = await asyncio.gather(*(one(i) for i in range(sessions)))
            setup_s = time.perf_counter() - began
            await asyncio.sleep(1)  # the turn ends' follow-up work
            result.server_before = rss_bytes(pid)
            result.agents_before = _rss_of(descendants(pid))
            result.running_before = await _running(ctx.api, [s for s, _ in held])
            progress(
                f"{db}: {sessions} sessions with a detached question (set up in {setup_s:.0f} s): "
                f"server {result.server_before / 2**20:.0f} MiB + "
                f"{len(result.agents_before)} agent processes "
                f"{sum(result.agents_before) / 2**20:.0f} MiB"
            )
            await _all_stopped(ctx.api, [s for s, _ in held], idle_stop_s + 120)
            await _processes_gone(pid, limit_s=30)
            result.server_after = rss_bytes(pid)
            result.agents_after = _rss_of(descendants(pid))
            before_cpu = cpu_seconds(pid)
            await asyncio.sleep(IDLE_CPU_WINDOW_S)
            result.idle_cpu = (cpu_seconds(pid) - before_cpu) / IDLE_CPU_WINDOW_S
            progress(
                f"{db}: after the idle stop: server {result.server_after / 2**20:.0f} MiB, "
                f"{len(result.agents_after)} agent processes; idle CPU {result.idle_cpu * 100:.2f}%"
            )
            for _, pending_id in held[:answers]:
                elapsed, body = await ctx.api.respond(pending_id)
                if body.get("resumed") is not True:
                    raise RuntimeError(f"answer to {pending_id} did not resume: {body}")
                result.restarts.append(elapsed)
        finally:
            await ctx.close()
            server.stop()
    return result
