"""What features add to a cycle: servers with a feature on beside one with none, their MCP
throughput windows taking turns (`bench.paired`), one baseline for every feature measured.

- `telemetry`: metrics scraped and traces exported (`bench.telemetry_cost`);
- `slack`: each question posted to Slack and updated once answered (`bench.slack_cost`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import paired, slack_cost, telemetry_cost
from bench.context import progress
from bench.loopback_sinks import otlp_sink, slack_stand_in
from bench.paired import PairSizes, Setup, Side
from bench.slack_cost import Delivered, OutboxDrained
from bench.stats import Row
from bench.telemetry_cost import Exported
from bench.throughput import McpThroughput

BASELINE = "none"
FEATURES = ("telemetry", "slack")


@dataclass
class FeatureCosts:
    sessions: int
    windows: dict[str, list[McpThroughput]]  # by feature, and BASELINE; in round order
    exported: Exported = field(default_factory=Exported)
    delivered: list[Delivered] = field(default_factory=list)  # the Slack server's windows


async def measure(
    db: str, workdir: Path, sizes: PairSizes, features: Sequence[str] = FEATURES
) -> FeatureCosts:
    progress(f"{db}: {', '.join(features)} against none, {sizes.sessions} sessions")
    exported = Exported()
    with contextlib.ExitStack() as sinks:
        setups = {BASELINE: Setup()}
        drained: OutboxDrained | None = None
        if "telemetry" in features:
            sink = sinks.enter_context(otlp_sink())
            setups["telemetry"] = telemetry_cost.setup(sink)
        if "slack" in features:
            stand_in = sinks.enter_context(slack_stand_in())
            setups["slack"] = slack_cost.setup(stand_in)
            drained = OutboxDrained(stand_in)
        async with (
            paired.servers(db, workdir / "features", setups) as ctxs,
            contextlib.AsyncExitStack() as running,
        ):
            if "telemetry" in ctxs:
                url = ctxs["telemetry"].server.url
                await running.enter_async_context(telemetry_cost.scraping(url, exported))
            sides = {
                name: Side(ctx, settle=drained if name == "slack" else None)
                for name, ctx in ctxs.items()
            }
            windows = await paired.interleaved(sides, sizes)
        # The servers have stopped, each sending its last batch of spans first.
        if "telemetry" in features:
            exported.spans, exported.exports = sink.counts.get("spans"), sink.counts.get("exports")
    # One per measured window: a warm-up runs before its window's first settle.
    delivered = drained.windows if drained is not None else []
    return FeatureCosts(sizes.sessions, windows, exported, delivered)


def rows(db: str, costs: FeatureCosts) -> list[Row]:
    out: list[Row] = []
    none = costs.windows[BASELINE]
    if "telemetry" in costs.windows:
        out += telemetry_cost.rows(
            db, costs.windows["telemetry"], none, costs.sessions, costs.exported
        )
    if "slack" in costs.windows:
        out += slack_cost.rows(db, costs.windows["slack"], none, costs.delivered, costs.sessions)
    return out
