"""`python -m bench.compare OLD_SRC`: old code against new on the same machine, in one run.

OLD_SRC is the `src` directory of another checkout of Clarion (for instance
`git archive <commit> src | tar -x -C /tmp/old`). Servers of the old and the new code are
started alternately on fresh databases, each measured the same way: the live answer POST ->
MCP tool call returns p50 (one simulated agent, one answer at a time on an idle server), the
detached answer POST -> 200 resumed p50 (built-in agents; `--detached 0` skips it) and the
server CPU per cycle of the MCP throughput run with N sessions. Alternating spreads the host's
drift over both sides; CPU time is the steadier figure on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import tempfile
from pathlib import Path

from bench import latency, throughput
from bench.context import Ctx, progress
from bench.server import BenchServer, fresh_database, postgres_reachable
from bench.stats import Row, ms, percentile, render


async def _measure(
    db: str, old_src: Path | None, sessions: int, live: int, seconds: float, detached: int
) -> tuple[float, float, float, float]:
    """(live tool return p50 s, server CPU s per cycle, cycles per second, detached p50 s or
    NaN)."""
    workdir = Path(tempfile.mkdtemp(prefix="clarion-compare-"))
    extra = {"PYTHONPATH": str(old_src)} if old_src is not None else {}
    async with fresh_database(db, workdir) as url:
        server = BenchServer(url, workdir, extra_env=extra)
        await server.start()
        ctx = await Ctx.connect(db, server)
        try:
            _, to_return = await latency.live_mcp(ctx, live)
            resumed = await latency.detached(ctx, detached) if detached else [math.nan]
            await throughput.mcp_cycles_per_second(ctx, sessions, 1)  # warm-up
            t = await throughput.mcp_cycles_per_second(ctx, sessions, seconds)
        finally:
            await ctx.close()
            server.stop()
    return percentile(to_return, 50), t.server_cpu_per_cycle, t.rate, percentile(resumed, 50)


async def main_async(
    old_src: Path,
    dbs: list[str],
    reps: int,
    sessions: int,
    live: int,
    seconds: float,
    detached: int = 0,
) -> list[Row]:
    rows: list[Row] = []
    for db in dbs:
        if db == "postgres" and not await postgres_reachable():
            continue
        seen: dict[str, list[tuple[float, float, float, float]]] = {"old": [], "new": []}
        for rep in range(reps):
            for side in ("old", "new"):
                progress(f"{db}: {side} code, round {rep + 1}/{reps}")
                src = old_src if side == "old" else None
                seen[side].append(await _measure(db, src, sessions, live, seconds, detached))
        for side in ("old", "new"):
            runs = seen[side]
            rows.append(
                Row(
                    db,
                    f"{side}: server CPU per cycle, {sessions} sessions (MCP clients)",
                    f"{ms(statistics.median(r[1] for r in runs)):.2f} ms",
                    note="runs: " + ", ".join(f"{ms(r[1]):.2f}" for r in runs),
                )
            )
            rows.append(
                Row(
                    db,
                    f"{side}: live answer POST -> MCP tool call returns p50",
                    f"{ms(statistics.median(r[0] for r in runs)):.1f} ms",
                    note="runs: " + ", ".join(f"{ms(r[0]):.1f}" for r in runs),
                )
            )
            if detached:
                rows.append(
                    Row(
                        db,
                        f"{side}: detached answer POST -> 200 resumed p50",
                        f"{ms(statistics.median(r[3] for r in runs)):.1f} ms",
                        note="runs: " + ", ".join(f"{ms(r[3]):.1f}" for r in runs),
                    )
                )
            rows.append(
                Row(
                    db,
                    f"{side}: throughput, {sessions} sessions (MCP clients)",
                    f"{statistics.median(r[2] for r in runs):.1f} cycles/s",
                    note="runs: " + ", ".join(f"{r[2]:.1f}" for r in runs),
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("old_src", type=Path, help="the old checkout's src directory")
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--live", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--detached", type=int, default=20, help="detached answers; 0 skips")
    args = parser.parse_args(argv)
    rows = asyncio.run(
        main_async(
            args.old_src.resolve(),
            args.db.split(","),
            args.reps,
            args.sessions,
            args.live,
            args.seconds,
            args.detached,
        )
    )
    print(render(rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
