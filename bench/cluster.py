"""Cluster mode: throughput, server CPU and answer latency with 1, 2 and 3 replicas.

`python -m bench.cluster` prints just these rows; `bench.run` adds them as its `cluster` phase.

For each replica count a fresh PostgreSQL database gets that many `clarion serve --cluster`
replicas on one NATS server (`CLARION_BENCH_NATS_URL`, default `nats://127.0.0.1:4222`),
`CLARION_REPLICA_TIMEOUT_S` at its default. Every replica runs sessions: a new session goes
to the replica with the fewest, and a request that acts on a session is carried to the
replica that runs it over NATS request-reply (docs/cluster.md).

- Throughput: `bench.throughput.mcp_cycles_per_second` with the benchmark's HTTP requests
  (sessions started, answers POSTed, sessions finished) spread round-robin over every replica,
  as a load balancer without stickiness would, so the sessions spread over the replicas and
  an answer reaches its session's replica directly one time in n; the simulated agents' MCP
  calls go to their session's replica, whose URL they were given. CPU is counted for every
  replica process (utime + stime, children excluded) and reported summed, and per replica,
  each with the part of it that was the garbage collector's: every replica's
  `clarion_gc_cpu_seconds_total` is read before and after the window (`window_counters`), and
  the cost of a replica added says how much of its growth was the collector's.
- Latency: `bench.latency.live_mcp`, one answer at a time on an otherwise idle cluster. Its one
  session goes to the first replica (asked there while no replica has one); the answers are POSTed
  alternately to that replica and to another one (which carries it there), so both sets of
  samples see the same machine.

The WebSocket feed the benchmark waits on is connected to the first replica in both.

With redirects (`ClusterSizes.redirects`): the most replicas are measured once more per round
with `CLARION_REDIRECT_TO_OWNER=1` on every replica and clients that follow a 307, so a request
for another replica's session goes from the client to its owner instead of being carried
(docs/cluster.md). One replica never redirects, so the cost per added replica with redirects
compares these windows with the same round's one-replica window. Every measurement says how
many requests the replicas carried (`clarion_carried_requests_total`, summed): with redirects
followed, only new sessions' placements.

With `CLARION_BENCH_NATS_MONITOR` set to the NATS server's monitoring URL (`nats-server -m
8222`: `http://127.0.0.1:8222`), the throughput row's note also says what crossed NATS per
cycle, counted by the server (`/connz`) over the replicas' connections: the events it delivered
to the replicas' buses (messages, bytes), and the messages it delivered on their request-reply
connections (carried requests, their replies, the inbox's waiter queries). Counts do not move
with the host's load, where CPU per cycle does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import os
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from bench import latency, throughput
from bench.client import Api, RoundRobinApi
from bench.cluster_rows import ClusterResult, cluster_rows
from bench.context import Ctx, progress
from bench.cpu_rows import gc_cpu_seconds
from bench.server import BenchServer, fresh_database, postgres_reachable
from bench.stats import Row, render

NATS_URL = os.environ.get("CLARION_BENCH_NATS_URL", "nats://127.0.0.1:4222")
NATS_MONITOR = os.environ.get("CLARION_BENCH_NATS_MONITOR", "")
# The connection names a replica gives NATS: its bus, and its request-reply connection.
_BUS_CONNECTION = "clarion"
_REQUESTS_CONNECTION = "clarion-carrying"


async def nats_deliveries() -> tuple[float, ...]:
    """(bus messages, bus bytes, request-reply messages) the NATS server has delivered to
    every replica so far, from its monitoring endpoint."""
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"{NATS_MONITOR}/connz", params={"limit": 4096})
        response.raise_for_status()
    totals = [0.0, 0.0, 0.0]
    for conn in response.json().get("connections") or ():
        name = conn.get("name")
        if name == _BUS_CONNECTION:
            totals[0] += conn.get("out_msgs", 0)
            totals[1] += conn.get("out_bytes", 0)
        elif name == _REQUESTS_CONNECTION:
            totals[2] += conn.get("out_msgs", 0)
    return tuple(totals)


@dataclass(frozen=True)
class ClusterSizes:
    replicas: tuple[int, ...] = (1, 2, 3)
    sessions: int = 10  # simulated MCP agents, as the 10-session throughput row
    throughput_s: float = 5.0
    live: int = 30  # answers per latency figure, each round
    # The replica counts are measured in turn, this many times each (bench.cluster_rows).
    rounds: int = 3
    # Also the most replicas with redirects to the owner followed, once per round.
    redirects: bool = True


QUICK = ClusterSizes(replicas=(1, 2), sessions=2, throughput_s=0.5, live=2, rounds=1)


async def nats_reachable(url: str | None = None) -> bool:
    """A NATS server answers on `url` (default `NATS_URL`; it greets every connection with an
    INFO line)."""
    parts = urlsplit(url or NATS_URL)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname or "127.0.0.1", parts.port or 4222), 3
        )
    except (TimeoutError, OSError):
        return False
    try:
        line = await asyncio.wait_for(reader.readline(), 3)
    except (TimeoutError, OSError):
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return line.startswith(b"INFO")


@dataclass
class Cluster:
    """Replicas on one database; `replicas[0]` is the oldest."""

    replicas: list[BenchServer]
    ids: list[str]

    @property
    def first(self) -> BenchServer:
        return self.replicas[0]

    @property
    def pids(self) -> list[int]:
        return [r.proc.pid for r in self.replicas if r.proc is not None]


async def wait_role(server: BenchServer, role: str, limit: float = 120.0) -> str:
    """Poll /healthz until it answers 200 in `role`; returns the replica's id."""
    deadline = time.perf_counter() + limit
    last = "not listening"
    await server.until_listening(deadline, every=0.05)
    async with httpx.AsyncClient(timeout=2) as client:
        while time.perf_counter() < deadline:
            if server.proc is not None and server.proc.poll() is not None:
                raise RuntimeError(
                    f"replica exited with {server.proc.returncode}:\n{server.logs()}"
                )
            try:
                response = await client.get(f"{server.url}/healthz")
                last = f"{response.status_code} {response.text[:200]}"
                body = response.json()
                if response.status_code == 200 and body.get("role") == role:
                    return str(body["replica"])
            except (httpx.HTTPError, ValueError):
                pass
            await asyncio.sleep(0.05)
    raise TimeoutError(f"replica on {server.url} not serving as {role} after {limit}s ({last})")


def _stop_all(servers: Sequence[BenchServer]) -> None:
    """The newest first; stopping a cluster is the benchmark's end, whatever a survivor adopts."""
    for server in reversed(servers):
        with contextlib.suppress(Exception):
            server.stop()
    for server in servers:  # a stop that failed above: kill whatever is left of its group
        if server.proc is not None and server.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(timeout=10)


async def window_counters(c: Cluster) -> tuple[float, ...]:
    """What a throughput window reads before and after it beside the replicas' CPU: each
    replica's garbage collector CPU seconds (in replica order), then, with
    `CLARION_BENCH_NATS_MONITOR` set, the NATS deliveries (`nats_deliveries`); the layout
    `ClusterResult` reads."""
    each = await asyncio.gather(*(gc_cpu_seconds(server.url) for server in c.replicas))
    gc = tuple(seconds for (seconds,) in each)
    return gc + (await nats_deliveries() if NATS_MONITOR else ())


async def carried(c: Cluster) -> int:
    """The requests every replica has carried to another so far."""
    total = 0.0
    async with httpx.AsyncClient(timeout=10) as client:
        for server in c.replicas:
            response = await client.get(f"{server.url}/metrics")
            response.raise_for_status()
            for line in response.text.splitlines():
                if line.startswith("clarion_carried_requests_total "):
                    total += float(line.split()[1])
    return int(total)


@contextlib.asynccontextmanager
async def cluster(n: int, workdir: Path, *, redirects: bool = False) -> AsyncIterator[Cluster]:
    """`n` replicas on a fresh PostgreSQL database (`redirects`: redirecting a request to its
    session's owner); stopped and the database dropped on exit."""
    env = {"CLARION_CLUSTER": "1", "CLARION_BUS_URL": NATS_URL}
    if redirects:
        env["CLARION_REDIRECT_TO_OWNER"] = "1"
    async with fresh_database("postgres", workdir) as url:
        servers: list[BenchServer] = []
        try:
            for i in range(n):
                home = Path(tempfile.mkdtemp(prefix=f"cluster{n}-replica{i}-", dir=workdir))
                servers.append(
                    BenchServer(
                        url,
                        home,
                        extra_env=env,
                        shared_relay_dir=workdir / f"cluster{n}-relay",
                    )
                )
            # One at a time, so that the first is the oldest.
            ids = []
            for server in servers:
                server.spawn()
                ids.append(await wait_role(server, "active"))
            progress(f"cluster: {n} replicas up, first {ids[0]}")
            yield Cluster(servers, ids)
        finally:
            _stop_all(servers)


async def measure(
    n: int, workdir: Path, sizes: ClusterSizes, *, redirects: bool = False
) -> ClusterResult:
    async with cluster(n, workdir, redirects=redirects) as c:
        apis = [Api(r.api, follow_redirects=redirects) for r in c.replicas]
        ctx = await Ctx.connect(f"cluster x{n}", c.first)
        try:
            # Answers alternate between the session's replica (the first) and the second.
            targets = apis[:2]
            to_200, to_return = await latency.live_mcp(
                ctx, sizes.live * len(targets), answer_to=targets
            )
            by_target = [
                (to_200[k :: len(targets)], to_return[k :: len(targets)])
                for k in range(len(targets))
            ]
            via_owner = by_target[0]
            via_other = by_target[1] if n > 1 else None
            spread = dataclasses.replace(ctx, api=RoundRobinApi(apis))
            t = await throughput.mcp_cycles_per_second(
                spread,
                sizes.sessions,
                sizes.throughput_s,
                pids=c.pids,
                counters=functools.partial(window_counters, c),
            )
            moved = await carried(c)
        finally:
            await ctx.close()
            for api in apis:
                await api.close()
    return ClusterResult(n, t, via_owner, via_other, carried=moved)


async def rows(workdir: Path, sizes: ClusterSizes) -> list[Row]:
    """Every replica count's rows, or one row saying why the phase was skipped."""
    if not await postgres_reachable():
        progress("cluster: PostgreSQL unreachable, skipped")
        return [Row("postgres", "cluster", "skipped", note="PostgreSQL unreachable")]
    if not await nats_reachable():
        progress(f"cluster: NATS at {NATS_URL} unreachable, skipped")
        return [Row("postgres", "cluster", "skipped", note=f"NATS at {NATS_URL} unreachable")]
    taken: dict[int, list[ClusterResult]] = {n: [] for n in sizes.replicas}
    most = max(sizes.replicas)
    redirected: list[ClusterResult] = []
    for round_no in range(sizes.rounds):
        for n in sizes.replicas:
            progress(f"cluster: {n} replicas, round {round_no + 1} of {sizes.rounds}")
            taken[n].append(await measure(n, workdir, sizes))
        if sizes.redirects and most > 1:
            progress(f"cluster: {most} replicas with redirects, round {round_no + 1}")
            redirected.append(await measure(most, workdir, sizes, redirects=True))
    return cluster_rows(taken, sizes.sessions, redirected)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--out", type=Path, help="also write the Markdown table here")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else ClusterSizes()
    with tempfile.TemporaryDirectory(prefix="clarion-bench-") as tmp:
        table = render(asyncio.run(rows(Path(tmp), sizes)))
    print(table, flush=True)
    if args.out:
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
