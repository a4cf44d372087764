"""The service peers, Restate and LangGraph Server, measured the way Clarion's rows are.

Each peer is a server (or two) that the benchmark starts and drives over HTTP, as Clarion's
rows drive `clarion serve`. A loop is one workflow or thread that asks again as soon as it is
answered; a cycle answers the open question and ends when the next one is out. Figures:
- the round trip of one cycle from 1 client (p50, p99), after 3 warm-up cycles;
- cycles per second with 1, 10 and 100 loops running at once, each count's windows taken in
  turn round after round, the first after an uncounted warm-up on the same loops (as Clarion's),
  the median of its windows;
- the server side's CPU per cycle over each window: the CPU seconds of its process tree (for
  Restate, the Rust server and the Python service), as Clarion's server process is counted.
The bench client's own CPU per cycle is given beside it.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bench.context import freeze_heap, progress
from bench.footprint import cpu_seconds
from bench.proc_tree import descendants
from bench.waits import gather_within


class Loop(Protocol):
    async def cycle(self) -> None: ...
    async def close(self) -> None: ...


class ServicePeer(Protocol):
    name: str

    async def start(self) -> None: ...
    async def open_loop(self) -> Loop: ...
    def pids(self) -> list[int]: ...
    def stop(self) -> None: ...


OPEN_CONCURRENCY = 10


@dataclass(frozen=True)
class Window:
    rate: float
    cycles: int
    server_cpu_per_cycle: float  # seconds, the whole server side
    client_cpu_per_cycle: float
    per_process: tuple[float, ...]  # seconds per cycle of each of peer.pids() (their trees)


@dataclass
class PeerFigures:
    name: str
    round_trip: list[float] = field(default_factory=list)
    windows: dict[int, list[Window]] = field(default_factory=dict)

    def rate(self, n: int) -> float:
        return statistics.median(w.rate for w in self.windows[n])

    def cpu(self, n: int) -> float:
        return statistics.median(w.server_cpu_per_cycle for w in self.windows[n])


def _tree_cpu(pid: int) -> float:
    total = 0.0
    for each in (pid, *descendants(pid)):
        try:
            total += cpu_seconds(each)
        except OSError:
            continue  # exited meanwhile
    return total


async def _open(peer: ServicePeer, n: int) -> list[Loop]:
    gate = asyncio.Semaphore(OPEN_CONCURRENCY)

    async def one() -> Loop:
        async with gate:
            loop = await peer.open_loop()
            await loop.cycle()  # warm-up
            return loop

    return list(await gather_within(300, *(one() for _ in range(n))))


async def round_trip(peer: ServicePeer, samples: int) -> list[float]:
    (loop,) = await _open(peer, 1)
    for _ in range(2):
        await loop.cycle()
    freeze_heap()
    times: list[float] = []
    for _ in range(samples):
        began = time.perf_counter()
        await loop.cycle()
        times.append(time.perf_counter() - began)
    await loop.close()
    return times


async def _cycle_for(loops: list[Loop], seconds: float) -> tuple[int, float, float]:
    """Every loop cycling until `seconds` passed, each at least once: (cycles, start, end of
    the last cycle) in perf_counter seconds."""
    done = 0
    began = last = time.perf_counter()
    stop_at = began + seconds

    async def run(loop: Loop) -> None:
        nonlocal done, last
        while True:
            await loop.cycle()
            done += 1
            last = time.perf_counter()
            if last >= stop_at:
                return

    await gather_within(seconds + 120, *(run(loop) for loop in loops))
    return done, began, last


async def window(peer: ServicePeer, n: int, seconds: float, warmup_s: float = 0.0) -> Window:
    """Cycles per second and CPU per cycle with `n` loops cycling for `seconds`; `warmup_s`:
    the same loops first cycle that long, uncounted."""
    loops = await _open(peer, n)
    if warmup_s > 0:
        await _cycle_for(loops, warmup_s)
    freeze_heap()
    pids = peer.pids()
    # The window starts once the CPU is read (reading a process tree can outlast a short
    # window on a loaded host), and each loop cycles at least once: every window has a figure.
    cpu0 = [_tree_cpu(pid) for pid in pids]
    client0 = time.process_time()
    done, began, last = await _cycle_for(loops, seconds)
    client = time.process_time() - client0
    per_process = tuple((_tree_cpu(p) - c) / max(done, 1) for p, c in zip(pids, cpu0, strict=True))
    await gather_within(60, *(loop.close() for loop in loops))
    w = Window(
        rate=done / max(last - began, 1e-9),
        cycles=done,
        server_cpu_per_cycle=sum(per_process),
        client_cpu_per_cycle=client / max(done, 1),
        per_process=per_process,
    )
    progress(
        f"{peer.name}: {n} loops: {done} cycles, {w.rate:.1f}/s, server CPU "
        f"{w.server_cpu_per_cycle * 1000:.2f} ms/cycle"
    )
    return w


async def measure(
    peer: ServicePeer,
    samples: int,
    counts: Sequence[int],
    seconds: float,
    warmup_s: float,
    rounds: int,
) -> PeerFigures:
    """Start the peer, take its figures, stop it."""
    figures = PeerFigures(peer.name, windows={n: [] for n in counts})
    try:
        await peer.start()
        progress(f"{peer.name}: round trip, {samples} cycles from 1 client")
        figures.round_trip = await round_trip(peer, samples)
        for round_no in range(rounds):
            for n in counts:
                warm = warmup_s if round_no == 0 else 0.0
                figures.windows[n].append(await window(peer, n, seconds, warm))
    finally:
        peer.stop()
    return figures
