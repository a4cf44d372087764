"""A benchmark run with its measured windows profiled: `python -m bench.profiled OUT ARGS...`.

ARGS are `bench.run`'s, or `cluster` for `bench.cluster`'s rows at `CLUSTER`'s sizes. Every
throughput window of 2 s or more (warm-ups are shorter) is profiled while it runs, and nothing
else: Clarion's servers with py-spy (raw collapsed stacks, non-blocking, 200 Hz), a Restate
peer's Python service the same way and its Rust server with `perf record -g`. Each process
measured also gets the CPU of each of its threads over the window (by thread name). Files go
to OUT, one set per window, numbered in run order; `python -m bench.profile_layers OUT/*.raw`
sums them by layer. It patches the benchmark's window functions at run time; nothing in
`src/` changes.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import agent_procs, cluster, service_peers, throughput
from bench.stats import render

RATE = 200
MIN_WINDOW_S = 2.0
PY_SPY = os.environ.get("PY_SPY", shutil.which("py-spy") or "py-spy")
# One and three replicas, with redirects, two rounds: what a replica adds, not the latencies.
CLUSTER = cluster.ClusterSizes(replicas=(1, 3), live=2, rounds=2)
_seq = itertools.count(1)
_out = Path(".")
# The Clarion processes of the window about to start, by label (set by the patched
# mcp_cycles_per_second, read by the patched AgentProcesses.go).
_pending: dict[str, int] = {}
_running: list[tuple[subprocess.Popen[bytes], Any]] = []


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each of `pid`'s threads so far, summed by thread name (digits dropped)."""
    ticks = os.sysconf("SC_CLK_TCK")
    by_name: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        key = re.sub(r"[-_:]?\d+$", "", name)
        by_name[key] = by_name.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return by_name


def _start(label: str, pid: int, seconds: int, python: bool) -> None:
    base = _out / f"{next(_seq):02d}-{label}-{pid}"
    if python:
        cmd = [PY_SPY, "record", "--pid", str(pid), "--format", "raw", "--rate", str(RATE)]
        cmd += ["--nonblocking", "--duration", str(seconds), "--output", f"{base}.raw"]
    else:
        cmd = ["perf", "record", "-F", str(RATE), "-g", "-p", str(pid), "-o", f"{base}.perf"]
        cmd += ["--", "sleep", str(seconds)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _running.append((proc, (base, pid, thread_cpu(pid))))


def _collect() -> None:
    """Wait for the profilers and write each process's thread CPU over the window."""
    while _running:
        proc, (base, pid, before) = _running.pop()
        proc.wait(timeout=120)
        after = thread_cpu(pid)
        spent = {name: round(after[name] - before.get(name, 0.0), 3) for name in after}
        Path(f"{base}.threads.json").write_text(json.dumps(spent, indent=1) + "\n")


def _patch() -> None:
    measure = throughput.mcp_cycles_per_second
    go = agent_procs.AgentProcesses.go
    window = service_peers.window

    @functools.wraps(measure)
    async def measured(ctx: Any, n: int, duration: float, **kw: Any) -> Any:
        if duration >= MIN_WINDOW_S:
            pids = kw.get("pids") or [ctx.server.proc.pid]
            where = re.sub(r"\W+", "", f"{ctx.db}") + f"-{ctx.server.workdir.name}"
            for i, pid in enumerate(pids):
                _pending[f"{where}-n{n}-p{i}"] = pid
        try:
            return await measure(ctx, n, duration, **kw)
        finally:
            _pending.clear()
            _collect()

    def going(self: agent_procs.AgentProcesses, duration: float, *, more: bool = False) -> None:
        if not more:  # a warm-up on the same agents goes first, unprofiled
            for label, pid in _pending.items():
                _start(label, pid, round(duration), python=True)
        go(self, duration, more=more)

    @functools.wraps(window)
    async def peer_window(peer: Any, n: int, seconds: float, warmup_s: float = 0.0) -> Any:
        if seconds >= MIN_WINDOW_S:
            server, *services = peer.pids()
            python = peer.name != "restate"  # restate-server is a Rust binary
            _start(f"{peer.name}-n{n}-server", server, round(seconds), python=python)
            for i, pid in enumerate(services):
                _start(f"{peer.name}-n{n}-service{i}", pid, round(seconds), python=True)
        try:
            return await window(peer, n, seconds, warmup_s)
        finally:
            _collect()

    throughput.mcp_cycles_per_second = measured
    agent_procs.AgentProcesses.go = going  # type: ignore[method-assign]
    service_peers.window = peer_window


@contextmanager
def _into(out: Path) -> Iterator[None]:
    global _out
    out.mkdir(parents=True, exist_ok=True)
    _out = out
    _patch()
    yield


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    out, rest = Path(args[0]), args[1:]
    with _into(out):
        if rest[:1] == ["cluster"]:
            with tempfile.TemporaryDirectory(prefix="clarion-bench-") as tmp:
                rows = asyncio.run(cluster.rows(Path(tmp), CLUSTER))
            print(render(rows), flush=True)
            return 0
        from bench import run

        return run.main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
