"""The garbage collector's cost as `/metrics` counters: CPU seconds and collections, by generation.

The collector's settings (`clarion.server.collector`) were chosen by measuring this cost in the
benchmark; exposing it lets an operator see it on a real workload. A young collection walks every
tracked object allocated since the last one and still alive, so its cost grows with the requests
in flight (each open MCP tool call keeps a few hundred such objects: its coroutines, tasks, SSE
streams), and the figure shows when that begins to matter.

One figure per process, not per server: collections belong to the interpreter, and two servers
in one test process would otherwise each count every collection. Each collection costs two
callbacks and two reads of the thread's CPU clock (a collection runs on one thread, holding the
GIL, so its start and stop arrive in turn).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

GENERATIONS = 3


class GcTime(Collector):
    """Counts each collection and its thread CPU time once installed in `gc.callbacks`."""

    def __init__(self, clock: Callable[[], float] = time.thread_time) -> None:
        self._clock = clock
        self._started = 0.0
        self._seconds = [0.0] * GENERATIONS
        self._collections = [0] * GENERATIONS

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self._clock()
            return
        generation = info["generation"]
        self._seconds[generation] += self._clock() - self._started
        self._collections[generation] += 1

    def collect(self) -> Iterator[Metric]:
        seconds = CounterMetricFamily(
            "clarion_gc_cpu_seconds",
            "CPU time the garbage collector spent, by generation collected",
            labels=["generation"],
        )
        collections = CounterMetricFamily(
            "clarion_gc_collections",
            "Garbage collections, by generation collected",
            labels=["generation"],
        )
        for generation in range(GENERATIONS):
            seconds.add_metric([str(generation)], self._seconds[generation])
            collections.add_metric([str(generation)], self._collections[generation])
        yield seconds
        yield collections


_process: GcTime | None = None


def process_gc_time() -> GcTime:
    """This process's figure, installed on first use."""
    global _process
    if _process is None:
        _process = GcTime()
        gc.callbacks.append(_process.on_gc)
    return _process
