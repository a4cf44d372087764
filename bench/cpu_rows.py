"""The MCP throughput rows: cycles per second and server CPU per cycle at each session count.

The session counts are taken in turn, round after round, on one server (`rounds` windows each;
the first window of each count follows an uncounted warm-up on the same sessions), and each row
is the median of its count's windows. Growth from 10 sessions to 100 is the median of the
rounds' own ratios: the host's speed drifts by tens of percent within minutes here, and two
single windows minutes apart read that drift as growth, or hide it (1.32x, then 0.91x, in
two runs of the same code).

Each window also reads the server's `clarion_gc_cpu_seconds_total` before and after: the
garbage collector's CPU per cycle is what grows most with the requests in flight.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench import throughput
from bench.context import Ctx
from bench.stats import Row, ms

CPU_LIMIT_MS = 5.0
GROWTH_LIMIT = 1.1
# Cycles per second the embedded database is held to with 100 agents asking at once.
SQLITE_100_RATE = 1000


async def gc_cpu_seconds(base_url: str) -> tuple[float]:
    """The server's garbage collector CPU seconds so far, all generations."""
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(f"{base_url}/metrics")
        response.raise_for_status()
    total = sum(
        sample.value
        for family in text_string_to_metric_families(response.text)
        if family.name == "clarion_gc_cpu_seconds"
        for sample in family.samples
        if sample.name == "clarion_gc_cpu_seconds_total"
    )
    return (total,)


async def mcp_rows(
    db: str, ctx: Ctx, sessions: Sequence[int], seconds: float, warmup_s: float, rounds: int
) -> tuple[list[Row], dict[int, float]]:
    """The rows, and each count's median cycles per second."""
    windows: dict[int, list[throughput.McpThroughput]] = {n: [] for n in sessions}

    async def gc_seconds() -> tuple[float, ...]:
        return await gc_cpu_seconds(ctx.server.url)

    for round_no in range(rounds):
        for n in sessions:
            windows[n].append(
                await throughput.mcp_cycles_per_second(
                    ctx,
                    n,
                    seconds,
                    counters=gc_seconds,
                    warmup_s=warmup_s if round_no == 0 else 0.0,
                )
            )
    return throughput_rows(db, windows, seconds, warmup_s)


def throughput_rows(
    db: str,
    windows: dict[int, list[throughput.McpThroughput]],
    seconds: float,
    warmup_s: float,
) -> tuple[list[Row], dict[int, float]]:
    """Rows from each count's windows (in round order; `counted_per_cycle[0]` is the garbage
    collector's CPU), and each count's median cycles per second."""
    rows: list[Row] = []
    rates: dict[int, float] = {}
    for n, taken in windows.items():
        rates[n] = statistics.median(t.rate for t in taken)
        cpu = statistics.median(ms(t.server_cpu_per_cycle) for t in taken)
        gc = statistics.median(ms(t.counted_per_cycle[0]) for t in taken)
        client = statistics.median(ms(t.client_cpu_per_cycle) for t in taken)
        each = ", ".join(f"{ms(t.server_cpu_per_cycle):.2f}" for t in taken)
        rate_target = n == 100 and db == "sqlite"
        rows += [
            Row(
                db,
                f"throughput, {n} concurrent sessions (MCP clients)",
                f"{rates[n]:.1f} cycles/s",
                f">= {SQLITE_100_RATE} cycles/s" if rate_target else "",
                (rates[n] >= SQLITE_100_RATE) if rate_target else None,
                note=f"median of {len(taken)} windows of {seconds:g} s "
                f"({sum(t.cycles for t in taken)} cycles), after {warmup_s:g} s of warm-up",
            ),
            Row(
                db,
                f"server CPU per cycle, {n} sessions (MCP clients)",
                f"{cpu:.2f} ms",
                f"<= {CPU_LIMIT_MS:g} ms",
                cpu <= CPU_LIMIT_MS,
                f"windows {each} ms; garbage collector {gc:.2f} ms of it; "
                f"bench client {client:.2f} ms/cycle",
            ),
        ]
    if 10 in windows and 100 in windows:
        ratios = [
            big.server_cpu_per_cycle / small.server_cpu_per_cycle
            for small, big in zip(windows[10], windows[100], strict=True)
        ]
        ratio = statistics.median(ratios)
        gc_growth = statistics.median(
            ms(big.counted_per_cycle[0] - small.counted_per_cycle[0])
            for small, big in zip(windows[10], windows[100], strict=True)
        )
        cpu_growth = statistics.median(
            ms(big.server_cpu_per_cycle - small.server_cpu_per_cycle)
            for small, big in zip(windows[10], windows[100], strict=True)
        )
        rows.append(
            Row(
                db,
                "server CPU per cycle, 100 sessions vs 10 (MCP clients)",
                f"{ratio:.2f}x",
                f"<= {GROWTH_LIMIT:g}x",
                ratio <= GROWTH_LIMIT,
                f"median of the rounds' ratios ({', '.join(f'{r:.2f}' for r in ratios)}); "
                f"+{cpu_growth:.2f} ms per cycle, of which the garbage collector "
                f"+{gc_growth:.2f} ms",
            )
        )
    return rows, rates
