"""Simulated agents in several processes, so a throughput figure measures the server.

One benchmark process running 100 simulated agents (an MCP client each, JSON-RPC over HTTP,
the WebSocket feed) spent about 8 ms of its own CPU per cycle: at 100 sessions it was the
client, not the server, that ran out of CPU. `AgentProcesses` runs the agents of sessions
already started in `processes` worker processes (`python -m bench.agent_procs`), each with its
own HTTP clients and its own WebSocket feed subscribed to its sessions' tasks only (so each
notification is sent once, to the process that waits for it, as one feed receiving everything
did before).

The protocol is one JSON line each way on the worker's stdin and stdout: the parent sends the
servers' URLs (and whether to follow a replica's redirect to a session's owner) and the
sessions; the worker connects every agent, runs one warm-up cycle each and says "ready"; the
parent says "go" with the duration; the worker runs cycles until then and answers with its
count, the monotonic instant its last cycle ended (CLOCK_MONOTONIC, the same in every process),
and its own CPU seconds over the run. A "go" with "more" is a window another follows on the same
agents (an uncounted warm-up before the measured one): the agents stay connected, where after
the last window they close their MCP clients before the worker answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.client import Api, Feed, RoundRobinApi
from bench.context import Ctx
from bench.server import BenchServer
from bench.simulated import SimulatedAgent
from bench.waits import gather_within

# Agent processes per measurement; more than the host's cores so that none of them is the bound.
PROCESSES = 4
_LIMIT_S = 300.0
_REPO_ROOT = str(Path(__file__).resolve().parent.parent)


@dataclass(frozen=True)
class WorkerResult:
    cycles: int
    last: float  # time.monotonic() when the worker's last cycle ended
    cpu: float  # the worker's CPU seconds from "go" to its last cycle


@dataclass(frozen=True)
class Agent:
    session_id: str
    task_id: str
    endpoint: dict[str, Any]


class AgentProcesses:
    """Worker processes, each running its share of the agents."""

    def __init__(self, procs: list[asyncio.subprocess.Process]) -> None:
        self._procs = procs

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls,
        bases: Sequence[str],
        ws_url: str,
        agents: Sequence[Agent],
        processes: int,
        *,
        follow_redirects: bool = False,
    ) -> AsyncIterator[AgentProcesses]:
        n = max(1, min(processes, len(agents)))
        shares = [agents[i::n] for i in range(n)]
        repo_root = _REPO_ROOT
        procs: list[asyncio.subprocess.Process] = []
        try:
            for share in shares:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "bench.agent_procs",
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    cwd=repo_root,
                )
                procs.append(proc)
                setup = {
                    "bases": list(bases),
                    "follow": follow_redirects,
                    "ws": ws_url,
                    "agents": [a.__dict__ for a in share],
                }
                _send(proc, setup)
            for proc in procs:
                if await _receive(proc) != "ready":
                    raise RuntimeError("an agent process did not get ready")
            yield cls(procs)
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()

    def go(self, duration: float, *, more: bool = False) -> None:
        """Run cycles for `duration` seconds; `more`: another window follows this one."""
        for proc in self._procs:
            _send(proc, {"go": duration, "more": more})

    async def results(self) -> list[WorkerResult]:
        replies = await asyncio.gather(*(_receive(p) for p in self._procs))
        return [WorkerResult(**r) for r in replies]


def _send(proc: asyncio.subprocess.Process, body: Any) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(body).encode() + b"\n")


async def _receive(proc: asyncio.subprocess.Process) -> Any:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), _LIMIT_S)
    if not line:
        raise RuntimeError(f"an agent process exited with {await proc.wait()}")
    return json.loads(line)


async def _worker() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def receive() -> Any:
        return json.loads(await reader.readline())

    def say(body: Any) -> None:
        sys.stdout.write(json.dumps(body) + "\n")
        sys.stdout.flush()

    setup = await receive()
    apis = [Api(base, follow_redirects=bool(setup.get("follow"))) for base in setup["bases"]]
    api: Api = apis[0] if len(apis) == 1 else RoundRobinApi(apis)
    feed = await Feed.open(setup["ws"])
    agents = [Agent(**a) for a in setup["agents"]]
    await feed.only_tasks([a.task_id for a in agents])
    # The agents never read the server's relay directory: a placeholder stands in.
    ctx = Ctx("agents", BenchServer("", Path(".")), api, feed)
    ready = asyncio.Barrier(len(agents) + 1)
    # Each agent's orders, one per window: whether another window follows it.
    orders: list[asyncio.Queue[bool]] = [asyncio.Queue() for _ in agents]
    # One per agent per window as it ends it: None, or what stopped the agent.
    ended: asyncio.Queue[BaseException | None] = asyncio.Queue()
    stop_at = last = cpu_at_last = 0.0
    done = 0

    async def run(agent: Agent, order: asyncio.Queue[bool]) -> None:
        nonlocal done, last, cpu_at_last
        try:
            async with SimulatedAgent.connect(ctx, agent.session_id, agent.endpoint) as simulated:
                await simulated.cycle()  # warm-up
                await ready.wait()
                while True:
                    more = await order.get()
                    while time.monotonic() < stop_at:
                        await simulated.cycle()
                        done += 1
                        last = time.monotonic()
                        cpu_at_last = time.process_time()
                    if not more:
                        break  # the last window ends once the client is closed, as it was
                    ended.put_nowait(None)
        except Exception as error:
            ended.put_nowait(error)
            raise
        ended.put_nowait(None)

    tasks = [asyncio.ensure_future(run(a, q)) for a, q in zip(agents, orders, strict=True)]
    await asyncio.wait_for(ready.wait(), _LIMIT_S)
    say("ready")
    more = True
    while more:
        order = await receive()
        duration, more = float(order["go"]), bool(order.get("more"))
        done, last, cpu_at_last = 0, 0.0, 0.0
        cpu0 = time.process_time()
        stop_at = time.monotonic() + duration
        for queue in orders:
            queue.put_nowait(more)
        async with asyncio.timeout(duration + 120):
            for _ in agents:
                if (error := await ended.get()) is not None:
                    raise error
        say({"cycles": done, "last": last, "cpu": max(cpu_at_last - cpu0, 0.0)})
    await gather_within(60, *tasks)
    await feed.close()
    for one in apis:
        await one.close()


if __name__ == "__main__":
    asyncio.run(_worker())
