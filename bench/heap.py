"""Profiling aid: `clarion serve` with its allocations traced, a snapshot on every SIGUSR1.

Usage: `HEAP_OUT=/tmp/heap python -m bench.heap serve --port P --database URL`, then
`kill -USR1 <pid>` at each moment of interest: each writes `HEAP_OUT-<n>.snap`
(`tracemalloc.Snapshot.load`, and `compare_to` between two) of what is allocated then, with
`HEAP_FRAMES` frames per allocation (default 8). Tracing slows the server: read it for where
memory goes, not for CPU. It changes nothing in `src/`.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import tracemalloc
from types import FrameType


def main() -> None:
    from clarion.cli import main as cli_main

    out = os.environ["HEAP_OUT"]
    tracemalloc.start(int(os.environ.get("HEAP_FRAMES", "8")))
    taken = itertools.count(1)

    def snapshot(signum: int, frame: FrameType | None) -> None:
        tracemalloc.take_snapshot().dump(f"{out}-{next(taken)}.snap")

    signal.signal(signal.SIGUSR1, snapshot)
    sys.argv = ["clarion", *sys.argv[1:]]
    cli_main()


if __name__ == "__main__":
    main()
