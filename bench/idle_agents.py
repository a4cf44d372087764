"""Idle agents: what sessions waiting on a person cost before and after their agents stop.

N sessions on one server, each with the built-in agent (a real subprocess) holding a detached
question (`/scenario ask-timeout t=2`: the agent's own MCP client gives up, the question stays
open, the turn ends). A running built-in agent holds ~80 MiB, so the issue's 1,000 cannot run
at once on a small host: the sessions are set up in waves of `wave`, and a wave starts only
once at most `wave` agents are left running (the profile's `agent_idle_stop_after` stops the
earlier waves' agents meanwhile), so no more than twice `wave` run at once. One wave (N at
most `wave`) is the plain case: every agent runs when the first figures are read.

- the total RSS of the server and its agents (every process below the server) as the wave with
  the most agents running ended: per-agent RSS is measured there, the N-at-once total projected
  from it; and again once every session's agent was stopped for idleness, measured at N;
- the server's CPU per second of wall time while nothing happens, after the stop;
- answer POST -> 200 `resumed` for a session whose agent was stopped: the answer starts the
  agent again (`session/load`) before the resume, so this is the cost of the restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.client import Api, Feed, ask_timeout, is_turn_completed
from bench.context import Ctx, progress
from bench.footprint import cpu_seconds, rss_bytes
from bench.proc_tree import descendants, rss_of, running_command
from bench.server import BenchServer, fresh_database

# One wave: its idle stop waits for the whole set-up (seconds per session on top of a margin),
# so every agent runs when the "before" figures are read.
_SETUP_S_PER_SESSION = 2.0
_SETUP_MARGIN_S = 30.0
# Several waves: agents stop soon after their question detached, while the next wave is set up.
WAVE_IDLE_STOP_S = 15
WAVE = 25
_AGENT_COMMAND = "clarion.agents.builtin"
# Agents started at once: 25, and then 8, starting together on a host at load 35-40 kept a
# session's start POST (which returns once its agent runs) over the client's 60 s timeout.
_STARTING = 4


@dataclass(frozen=True)
class WaveRead:
    """Figures read as a wave's last session held its question."""

    sessions: int  # sessions set up so far, this wave's included
    server: int  # server RSS
    processes: list[int]  # RSS of each process below the server: agents and their guards
    agents: int  # how many of them are built-in agents

    @property
    def total(self) -> int:
        return self.server + sum(self.processes)

    @property
    def per_agent(self) -> float:
        """What one running agent costs: its processes' RSS, guard included."""
        return sum(self.processes) / max(1, self.agents)


@dataclass
class IdleAgents:
    sessions: int  # set up: the target, or fewer when the set-up budget ran out
    wave: int
    idle_stop_s: int
    target: int = 0
    setup_budget_s: float | None = None
    server_empty: int = 0
    waves: list[WaveRead] = field(default_factory=list)
    most_agents: int = 0  # most agent processes seen at once during the set-up
    setup_s: float = 0.0
    server_after: int = 0
    agents_after: list[int] = field(default_factory=list)
    idle_cpu: float = 0.0  # server CPU seconds per wall second, after the stop
    idle_cpu_window_s: float = 0.0
    restarts: list[float] = field(default_factory=list)  # answer -> resumed 200, seconds

    @property
    def largest(self) -> WaveRead:
        """The wave read with the most agents running: where per-agent RSS is measured."""
        return max(self.waves, key=lambda w: (w.agents, w.sessions))

    @property
    def all_at_once(self) -> bool:
        return self.largest.agents >= self.sessions

    @property
    def projected_before(self) -> float:
        """Every session's agent running at once: the last wave's server plus N agents."""
        return self.waves[-1].server + self.sessions * self.largest.per_agent

    @property
    def total_after(self) -> int:
        return self.server_after + sum(self.agents_after)

    @property
    def server_per_session(self) -> float | None:
        """Server RSS added per session between the first and the last wave read."""
        first, last = self.waves[0], self.waves[-1]
        if last.sessions == first.sessions:
            return None
        return (last.server - first.server) / (last.sessions - first.sessions)


def default_idle_stop(sessions: int, wave: int) -> int:
    if sessions <= wave:
        return int(_SETUP_MARGIN_S + _SETUP_S_PER_SESSION * sessions)
    return WAVE_IDLE_STOP_S


def agent_processes(server_pid: int) -> list[int]:
    return running_command(descendants(server_pid), _AGENT_COMMAND)


async def _detached_session(
    api: Api, feed: Feed, i: int, starting: asyncio.Semaphore
) -> tuple[str, str]:
    """A session whose built-in agent asked and whose question detached: (session, pending).

    `starting` bounds the sessions whose agent is being started (the costly part; a wave's
    others wait for their question meanwhile). The messages are read again each time one of
    the session's turns completes, not on a timer: on a loaded host a server polled by a wave
    of sessions every second spent its share of the cores answering the polls. Under load the
    agent's MCP client can give up before its call reaches the server: the turn then ends
    without a question, and the prompt is sent again."""
    task_id = await api.create_task(f"idle agent {i}")
    async with starting:
        session_id = await api.start_session(task_id, ask_timeout(2))
    prompts = 1
    deadline = time.perf_counter() + 600
    while time.perf_counter() < deadline:
        # Registered before the read, so a turn that completes after it is not missed.
        completed = feed.expect(session_id, is_turn_completed)
        page = await api.ok("GET", f"/task-sessions/{session_id}/messages?limit=100")
        asked = [m for m in page["messages"] if m["type"] == "clarification_request"]
        ended = sum("No answer yet" in str(m["content"]) for m in page["messages"])
        if asked and ended:
            completed.cancel()
            return session_id, str(asked[0]["metadata"]["pending_id"])
        if ended >= prompts and not asked and prompts < 5:
            await api.prompt(session_id, ask_timeout(2))
            prompts += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(completed, 30)
    raise RuntimeError(f"session {session_id} never left a detached question")


async def _agents_at_most(pid: int, limit: int, result: IdleAgents, wait_s: float) -> None:
    """Until at most `limit` agent processes run below the server (earlier waves stopping)."""
    deadline = time.perf_counter() + wait_s
    while (count := len(agent_processes(pid))) > limit:
        result.most_agents = max(result.most_agents, count)
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{count} agents still running after {wait_s:.0f} s (> {limit})")
        await asyncio.sleep(0.5)


async def _set_up(ctx: Ctx, pid: int, result: IdleAgents) -> list[tuple[str, str]]:
    """Every session holding a detached question, set up wave by wave."""
    n, wave = result.sessions, result.wave
    starting = asyncio.Semaphore(_STARTING)
    held: list[tuple[str, str]] = []
    began = time.perf_counter()
    for start in range(0, n, wave):
        budget = result.setup_budget_s
        if held and budget is not None and time.perf_counter() - began > budget:
            progress(
                f"{ctx.db}: set-up budget of {result.setup_budget_s:.0f} s spent; no more waves"
            )
            break
        size = min(wave, n - start)
        await _agents_at_most(pid, 2 * wave - size, result, result.idle_stop_s + 120)
        held += await asyncio.gather(
            *(_detached_session(ctx.api, ctx.feed, i, starting) for i in range(start, start + size))
        )
        await asyncio.sleep(1)  # the turn ends' follow-up work
        below = descendants(pid)
        read = WaveRead(
            sessions=len(held),
            server=rss_bytes(pid),
            processes=rss_of(below),
            agents=len(running_command(below, _AGENT_COMMAND)),
        )
        result.waves.append(read)
        result.most_agents = max(result.most_agents, read.agents)
        elapsed = time.perf_counter() - began
        left = elapsed / len(held) * (n - len(held))
        progress(
            f"{ctx.db}: wave {len(result.waves)}/{-(-n // wave)}: {len(held)}/{n} sessions hold "
            f"a detached question ({elapsed:.0f} s, ~{left:.0f} s left); server "
            f"{read.server / 2**20:.0f} MiB, {read.agents} agents running "
            f"({sum(read.processes) / 2**20:.0f} MiB, {read.per_agent / 2**20:.1f} MiB each)"
        )
    result.setup_s = time.perf_counter() - began
    result.sessions = len(held)
    return held


async def _all_stopped(api: Api, session_ids: list[str], limit_s: float) -> None:
    deadline = time.perf_counter() + limit_s
    left = list(session_ids)
    while left:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{len(left)} agents still running after {limit_s:.0f} s")
        reads = [await api.ok("GET", f"/task-sessions/{s}") for s in left]
        left = [r["session"]["id"] for r in reads if r["session"]["agent_process"] != "stopped"]
        if left:
            await asyncio.sleep(1.0)


async def _processes_gone(pid: int, limit_s: float) -> None:
    """Until no process is left below the server (a stopped agent reads `stopped` at once, its
    process takes a moment to exit), or `limit_s` passed: then what is left is measured."""
    for _ in range(int(limit_s / 0.25)):
        if not descendants(pid):
            break
        await asyncio.sleep(0.25)
    await asyncio.sleep(1)  # the server's own follow-up work


async def measure(
    db: str,
    workdir: Path,
    sessions: int,
    answers: int,
    idle_stop_s: int | None = None,
    *,
    wave: int = WAVE,
    idle_cpu_window_s: float = 30.0,
    setup_budget_s: float | None = None,
) -> IdleAgents:
    """`idle_stop_s`: the profile's `agent_idle_stop_after`; by default a margin over one
    wave's set-up, or `WAVE_IDLE_STOP_S` with several waves. A set-up longer than it (a loaded
    host) lets the first agents stop before the wave's figures are read: they say how many
    ran then. `setup_budget_s`: no wave starts after that long (a shared host's load may make
    N take longer than the time there is); the figures are then those of the sessions set up."""
    wave = max(1, min(wave, sessions))
    if idle_stop_s is None:
        idle_stop_s = default_idle_stop(sessions, wave)
    result = IdleAgents(
        sessions=sessions,
        wave=wave,
        idle_stop_s=idle_stop_s,
        target=sessions,
        setup_budget_s=setup_budget_s,
    )
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
            result.server_empty = rss_bytes(pid)
            held = await _set_up(ctx, pid, result)
            progress(f"{db}: every session set up in {result.setup_s:.0f} s; waiting for the stop")
            await _all_stopped(ctx.api, [s for s, _ in held], idle_stop_s + 120)
            await _processes_gone(pid, limit_s=30)
            result.server_after = rss_bytes(pid)
            result.agents_after = rss_of(descendants(pid))
            before_cpu = cpu_seconds(pid)
            await asyncio.sleep(idle_cpu_window_s)
            result.idle_cpu = (cpu_seconds(pid) - before_cpu) / idle_cpu_window_s
            result.idle_cpu_window_s = idle_cpu_window_s
            progress(
                f"{db}: after the idle stop: server {result.server_after / 2**20:.0f} MiB, "
                f"{len(result.agents_after)} agent processes; idle CPU {result.idle_cpu * 100:.2f}%"
                f" over {idle_cpu_window_s:g} s"
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
