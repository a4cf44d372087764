"""Profiling aid: `clarion serve` with the store, projection and resolver methods timed.

Usage: `TRACE_OUT=/tmp/trace.txt python -m bench.trace serve --port P --database URL`.
Every async method of the store's parts (one per area, store/stores.py), EventPublisher,
SummaryService, PendingProjector, Resolver and ClaimRestorer writes `<ms> > Class.method` on
entry and `<ms> < Class.method <elapsed ms>` on exit to TRACE_OUT, so one request's timeline
can be read off directly. It patches classes at run time; nothing in `src/` changes.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import time
from collections.abc import Callable
from typing import IO, Any


def _wrap(cls: type, out: IO[str]) -> None:
    for name, fn in list(vars(cls).items()):
        if not inspect.iscoroutinefunction(fn):
            continue

        def make(fn: Callable[..., Any] = fn, label: str = f"{cls.__name__}.{name}") -> Any:
            @functools.wraps(fn)
            async def timed(*args: Any, **kwargs: Any) -> Any:
                began = time.perf_counter()
                out.write(f"{began * 1000:.2f} > {label}\n")
                try:
                    return await fn(*args, **kwargs)
                finally:
                    ended = time.perf_counter()
                    out.write(f"{ended * 1000:.2f} < {label} {1000 * (ended - began):.2f}\n")

            return timed

        setattr(cls, name, make())


def main() -> None:
    from clarion.clarification.resolver import Resolver
    from clarion.clarification.restorer import ClaimRestorer
    from clarion.cli import main as cli_main
    from clarion.projection.events import EventPublisher
    from clarion.projection.pending import PendingProjector
    from clarion.projection.summaries import SummaryService
    from clarion.store import stores

    out = open(os.environ["TRACE_OUT"], "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    # Each port's object binds its parts' methods when the store is built, so patching the
    # parts' classes first times every store call.
    for value in vars(stores).values():
        if isinstance(value, type) and value.__module__.startswith("clarion.store."):
            _wrap(value, out)
    for cls in (EventPublisher, SummaryService, PendingProjector, Resolver, ClaimRestorer):
        _wrap(cls, out)
    sys.argv = ["clarion", *sys.argv[1:]]
    cli_main()


if __name__ == "__main__":
    main()
