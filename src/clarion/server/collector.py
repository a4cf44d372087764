"""The garbage collector's settings once start-up is done.

Two measured costs, both from the throughput benchmark on PostgreSQL (`bench.run`):

- What start-up built (modules, the app, compiled statements) lives as long as the process.
  Frozen, it is out of the collector's view: over it, each full collection took about 150 ms,
  stalling every request in flight.
- With the default threshold (a young collection every 700 allocations) each request's objects
  were still alive at the next young collection, and the more requests were in flight the more
  of them survived into the older generations, whose collections then ran often and long (full
  ones of ~100-180 ms): the collector cost 0.5-0.7 ms of CPU per cycle with 10 concurrent
  sessions and 1.4 ms with 100, about 0.8 ms of the 1.1-2.0 ms a cycle grew by from 10
  sessions to 100. Collecting the young generation every 10,000 allocations instead lets
  almost all of them die first: 0.1 and 0.4 ms per cycle, no full collection in a 15 s run;
  the server's CPU per cycle at 100 sessions 8.70 -> 7.52 ms (`bench.compare`, 3 rounds), the
  same at 10, latencies unchanged.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

# Allocations (less deallocations) between two collections of the young generation.
YOUNG_COLLECTION_EVERY = 10_000


def settle_after_startup() -> None:
    """Freeze what exists now and collect the young generation less often from here on."""
    collected = gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, older, oldest)
    log.info(
        "start-up heap frozen",
        extra={
            "collected": collected,
            "frozen": gc.get_freeze_count(),
            "gc_threshold": gc.get_threshold(),
        },
    )
