"""How a smoke run of the benchmark fits a loaded host: it shrinks its work, and its ceiling
grows with the load, so a busy machine makes it slower, never red.

The load is the 1-minute load average per core. Above `BUSY` (more than twice as many runnable
processes as cores) the memory rows hold one session instead of two; the ceiling is the base
one times the load per core, never less than the base."""

from __future__ import annotations

import os
from dataclasses import replace

from bench.run import Sizes

BUSY = 2.0


def host_load() -> float:
    """Runnable processes per core, over the last minute."""
    return os.getloadavg()[0] / (os.cpu_count() or 1)


def smoke_sizes(sizes: Sizes, load: float) -> Sizes:
    if load <= BUSY:
        return sizes
    return replace(sizes, idle_sessions=(1,))


def smoke_ceiling(base_s: float, load: float) -> float:
    return base_s * max(1.0, load)
