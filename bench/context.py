"""What every measurement gets: the running server, HTTP, the WebSocket feed, progress output."""

from __future__ import annotations

import contextlib
import gc
import resource
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from bench.client import Api, Feed
from bench.server import BenchServer

_T0 = time.perf_counter()


def progress(message: str) -> None:
    """One line on stderr, stamped with seconds since the run began."""
    print(f"[{time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr, flush=True)


# Each part's name, wall seconds and CPU seconds, in the order they ran (`parts_summary`).
_PARTS: list[tuple[str, float, float]] = []


def cpu_so_far() -> float:
    """CPU seconds of this process and of the processes reaped below it (the servers, the
    workers, what each server waited for): on a shared host the wall time waits for the cores,
    this does not. What is not reaped below it is not in it: PostgreSQL, NATS, a process that
    left its parent's tree."""
    own, reaped = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


@contextlib.contextmanager
def part(name: str) -> Iterator[None]:
    """A named stretch of the run: a progress line as it starts and one with its wall and CPU
    seconds as it ends, so that whoever watches a long run sees where its time goes."""
    progress(name)
    began, cpu0 = time.perf_counter(), cpu_so_far()
    try:
        yield
    finally:
        took, cpu = time.perf_counter() - began, cpu_so_far() - cpu0
        _PARTS.append((name, took, cpu))
        progress(f"{name}: done in {took:.0f} s ({cpu:.0f} CPU-s)")


def parts_summary() -> None:
    """Every part's wall and CPU seconds on stderr, longest first, with the run's total."""
    total = time.perf_counter() - _T0
    print(
        f"[{total:6.1f}s] the parts, longest first (wall s, share of the run, CPU-s):",
        file=sys.stderr,
    )
    for name, took, cpu in sorted(_PARTS, key=lambda p: -p[1]):
        print(f"  {took:6.0f}  {took / total:4.0%}  {cpu:6.0f}  {name}", file=sys.stderr)
    sys.stderr.flush()


def freeze_heap() -> None:
    """Keep the benchmark's own full garbage collections out of its samples.

    This process holds the MCP and HTTP client libraries, a large heap: a full collection over
    it paused the process for ~100 ms about once per 30 answers, inside whichever sample was
    in flight (the live p99 was that pause). Collected and frozen once set-up is done, later
    collections only look at what the measurement itself allocates."""
    gc.collect()
    gc.freeze()


@dataclass
class Ctx:
    db: str
    server: BenchServer
    api: Api
    feed: Feed
    notes: list[str] = field(default_factory=list)

    @classmethod
    async def connect(cls, db: str, server: BenchServer) -> Ctx:
        return cls(db, server, Api(server.api), await Feed.open(server.ws_url))

    async def close(self) -> None:
        await self.feed.close()
        await self.api.close()
