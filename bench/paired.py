"""Servers measured side by side: MCP throughput windows on each in turn, round after round.

What a feature costs a cycle is the difference between a server with it and one without, and
on a shared host the speed drifts by tens of percent within minutes. So the servers run at
once and their windows take turns (each round starting one server later than the last), and a
figure is taken from each round's own windows, never from two medians minutes apart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench import throughput
from bench.context import Ctx
from bench.server import BenchServer, fresh_database
from bench.throughput import McpThroughput

Settle = Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class PairSizes:
    sessions: int = 10  # simulated MCP agents on each server
    seconds: float = 5.0  # each window
    warmup_s: float = 1.0  # uncounted, on each server before its first window
    rounds: int = 3


QUICK = PairSizes(sessions=1, seconds=0.3, warmup_s=0.0, rounds=1)


@dataclass(frozen=True)
class Setup:
    """What one of the two servers runs with beyond the benchmark's own config."""

    config: str = ""  # more of the config file (TOML)
    env: dict[str, str] = field(default_factory=dict)


@contextlib.asynccontextmanager
async def servers(
    db: str, workdir: Path, setups: dict[str, Setup]
) -> AsyncIterator[dict[str, Ctx]]:
    """A server per setup, each on a fresh database of `db` and in a directory of its own,
    started together; their contexts by the setups' names."""
    async with contextlib.AsyncExitStack() as stack:
        started: dict[str, BenchServer] = {}
        for name, setup in setups.items():
            home = workdir / name
            home.mkdir(parents=True, exist_ok=True)
            url = await stack.enter_async_context(fresh_database(db, home))
            started[name] = BenchServer(url, home, extra_config=setup.config, extra_env=setup.env)
            stack.callback(started[name].stop)
        await asyncio.gather(*(server.start() for server in started.values()))
        ctxs: dict[str, Ctx] = {}
        for name, server in started.items():
            ctxs[name] = await Ctx.connect(db, server)
            stack.push_async_callback(ctxs[name].close)
        yield ctxs


@dataclass(frozen=True)
class Side:
    ctx: Ctx
    # Awaited around each window's CPU reads (`throughput.mcp_cycles_per_second`).
    settle: Settle | None = None


async def interleaved(sides: dict[str, Side], sizes: PairSizes) -> dict[str, list[McpThroughput]]:
    """`sizes.rounds` windows on each side; in the first round each side's window follows
    `sizes.warmup_s` uncounted (none when 0) on the same sessions."""
    windows: dict[str, list[McpThroughput]] = {name: [] for name in sides}
    names = list(sides)
    for round_no in range(sizes.rounds):
        first = round_no % len(names)
        for name in names[first:] + names[:first]:
            side = sides[name]
            windows[name].append(
                await throughput.mcp_cycles_per_second(
                    side.ctx,
                    sizes.sessions,
                    sizes.seconds,
                    settle=side.settle,
                    warmup_s=sizes.warmup_s if round_no == 0 else 0.0,
                )
            )
    return windows


def round_ratios(over: list[McpThroughput], under: list[McpThroughput]) -> list[float]:
    """Each round's server CPU per cycle of `over` divided by that of `under`."""
    return [
        a.server_cpu_per_cycle / b.server_cpu_per_cycle for a, b in zip(over, under, strict=True)
    ]
