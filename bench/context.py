"""What every measurement gets: the running server, HTTP, the WebSocket feed, progress output."""

from __future__ import annotations

import gc
import sys
import time
from dataclasses import dataclass, field

from bench.client import Api, Feed
from bench.server import BenchServer

_T0 = time.perf_counter()


def progress(message: str) -> None:
    """One line on stderr, stamped with seconds since the run began."""
    print(f"[{time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr, flush=True)


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
