"""The feature-cost rows: metrics and tracing on against off, Slack's outbox per message; their
windows taking turns, their figures from each round's own windows, the loopback receivers they
count with, and a tiny run on real servers."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, cast

import pytest
from bench.context import Ctx
from bench.loopback_sinks import otlp_sink, slack_stand_in
from bench.paired import PairSizes, Side, interleaved
from bench.slack_cost import Delivered, OutboxDrained
from bench.telemetry_cost import Exported
from bench.throughput import McpThroughput
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from slack_sdk import WebClient

from bench import feature_costs, paired, slack_cost, telemetry_cost, throughput
from tests.bench.load import host_load, smoke_ceiling


def _window(cpu_ms: float, cycles: int = 100, rate: float = 50.0) -> McpThroughput:
    return McpThroughput(
        rate=rate, cycles=cycles, server_cpu_per_cycle=cpu_ms / 1000, client_cpu_per_cycle=0.004
    )


async def test_each_round_starts_one_server_later_and_only_the_first_warms_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[tuple[str, float, float]] = []

    async def window(
        ctx: Any, n: int, seconds: float, *, warmup_s: float = 0.0, **kwargs: Any
    ) -> McpThroughput:
        taken.append((ctx, warmup_s, seconds))
        return _window(5.0)

    monkeypatch.setattr(throughput, "mcp_cycles_per_second", window)
    # Each side's context stands in by its name: the windows are only recorded.
    sides = {name: Side(cast(Ctx, name)) for name in ("none", "telemetry", "slack")}
    windows = await interleaved(sides, PairSizes(sessions=2, seconds=5, warmup_s=1, rounds=3))
    # The warm-up runs on the first window's own sessions, before it: (side, warm-up, window).
    assert taken == [
        ("none", 1, 5),
        ("telemetry", 1, 5),
        ("slack", 1, 5),
        ("telemetry", 0, 5),
        ("slack", 0, 5),
        ("none", 0, 5),
        ("slack", 0, 5),
        ("none", 0, 5),
        ("telemetry", 0, 5),
    ]
    assert {name: len(w) for name, w in windows.items()} == {"none": 3, "telemetry": 3, "slack": 3}


def test_the_telemetry_row_is_the_median_of_the_rounds_ratios_judged_on_the_figure_shown() -> None:
    # The host slows in round 2 for both servers: its own ratio stays 1.05, as the others'.
    on = [_window(5.25), _window(8.4), _window(5.3)]
    off = [_window(5.0), _window(8.0), _window(5.0)]
    seen = Exported(spans=900, exports=4, scrapes=12)
    [row] = telemetry_cost.rows("sqlite", on, off, 10, seen)
    assert row.name == (
        "server CPU per cycle, metrics and tracing on / off, 10 sessions (MCP clients)"
    )
    assert (row.value, row.target, row.met) == ("1.05x", "<= 1.05x", True)
    assert "(1.05, 1.05, 1.06)" in row.note and "5.30 vs 5.00 ms" in row.note
    assert "900 spans in 4 exports" in row.note and "(12 scrapes)" in row.note
    [worse] = telemetry_cost.rows("sqlite", [_window(5.4)], [_window(5.0)], 10, seen)
    assert (worse.value, worse.met) == ("1.08x", False)


def test_the_slack_row_charges_each_rounds_extra_cpu_to_the_messages_it_delivered() -> None:
    slack = [_window(7.0, cycles=100), _window(9.0, cycles=50), _window(6.0, cycles=100)]
    without = [_window(5.0, rate=60), _window(6.0, rate=60), _window(5.0, rate=60)]
    # Round 1: 2 ms more per cycle over 100 cycles, 200 messages: 1 ms each. Round 2: 3 ms
    # over 50 cycles, 100 messages: 1.5 ms. Round 3: 1 ms over 100 cycles, 200: 0.5 ms.
    delivered = [Delivered(200, 4.0), Delivered(100, 2.5), Delivered(200, 5.0)]
    [row] = slack_cost.rows("postgres", slack, without, delivered, 10)
    assert row.value == "1.00 ms; 40/s"
    assert row.met is None
    assert "(1.00, 1.50, 0.50 ms)" in row.note
    assert "per cycle 7.00 vs 5.00 ms and 50 vs 60 cycles/s with Slack and without" in row.note


async def test_a_windows_drain_waits_for_a_post_and_an_update_of_every_question() -> None:
    with slack_stand_in() as stand_in:
        drained = OutboxDrained(stand_in)
        client = WebClient(token="xoxb-bench", base_url=stand_in.api_url)

        def message() -> None:
            posted = client.chat_postMessage(channel="C0BENCH", text="q")
            client.chat_update(channel="C0BENCH", ts=str(posted["ts"]), text="answered")

        await asyncio.to_thread(message)  # the warm-up cycle of the window's one session
        await drained(1)
        ending = asyncio.ensure_future(drained(3))  # two cycles in the window
        await asyncio.to_thread(message)
        await asyncio.sleep(0)
        assert not ending.done()
        await asyncio.to_thread(message)
        await asyncio.wait_for(ending, 30)
        [window] = drained.windows
        assert window.messages == 4 and window.seconds > 0
        # The next window counts on from there: its warm-up question is the fourth.
        waiting = asyncio.ensure_future(drained(1))
        await asyncio.to_thread(message)
        await asyncio.wait_for(waiting, 30)
        assert stand_in.counts.get("chat.postMessage") == 4


def test_the_otlp_sink_counts_the_spans_an_otlp_exporter_sends() -> None:
    with otlp_sink() as sink:
        provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint=f"{sink.endpoint}/v1/traces", timeout=10)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("bench")
        for name in ("respond", "claim", "deliver"):
            with tracer.start_as_current_span(name):
                pass
        provider.shutdown()
        assert (sink.counts.get("spans"), sink.counts.get("exports")) == (3, 3)
        assert sink.counts.get("bytes") > 0
        assert 'exporter = "otlp"' in sink.config()


@pytest.mark.e2e
@pytest.mark.slow
async def test_both_feature_rows_come_from_one_baseline_server_on_real_servers(
    tmp_path: Path,
) -> None:
    costs = await asyncio.wait_for(
        feature_costs.measure("sqlite", tmp_path, paired.QUICK), smoke_ceiling(240, host_load())
    )
    assert set(costs.windows) == {"none", "telemetry", "slack"}
    assert all(len(w) == 1 and w[0].cycles > 0 for w in costs.windows.values())
    assert costs.exported.spans > 0 and costs.exported.scrapes >= 1
    [delivered] = costs.delivered
    assert delivered.messages == 2 * costs.windows["slack"][0].cycles
    telemetry, slack = feature_costs.rows("sqlite", costs)
    assert re.fullmatch(r"\d+\.\d\dx", telemetry.value) and telemetry.met is not None
    assert re.fullmatch(r"-?\d+\.\d\d ms; \d+/s", slack.value), slack.value
