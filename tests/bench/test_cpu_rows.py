"""The MCP throughput rows from their windows: medians, and growth as the rounds' own ratios."""

from __future__ import annotations

from bench.cpu_rows import throughput_rows
from bench.throughput import McpThroughput


def _window(cpu_ms: float, gc_ms: float, rate: float = 100.0) -> McpThroughput:
    return McpThroughput(
        rate=rate,
        cycles=500,
        server_cpu_per_cycle=cpu_ms / 1000,
        client_cpu_per_cycle=0.003,
        counted_per_cycle=(gc_ms / 1000,),
    )


def test_growth_is_the_median_of_each_rounds_ratio_not_the_ratio_of_medians() -> None:
    # The host slows in round 2: both counts' windows cost more there. The rounds' own ratios
    # are 1.05, 1.05 and 1.5; the medians' ratio would be 6.3 / 4.2 = 1.5.
    windows = {
        10: [_window(4.0, 0.1), _window(6.0, 0.1), _window(4.2, 0.1, rate=120.0)],
        100: [_window(4.2, 0.5), _window(6.3, 0.4), _window(6.3, 0.6, rate=80.0)],
    }
    rows, rates = throughput_rows("sqlite", windows, 5.0, 1.0)
    by_name = {row.name: row for row in rows}
    growth = by_name["server CPU per cycle, 100 sessions vs 10 (MCP clients)"]
    assert (growth.value, growth.target, growth.met) == ("1.05x", "<= 1.1x", True)
    assert "(1.05, 1.05, 1.50)" in growth.note
    assert "+0.30 ms per cycle, of which the garbage collector +0.40 ms" in growth.note
    ten = by_name["server CPU per cycle, 10 sessions (MCP clients)"]
    assert (ten.value, ten.met) == ("4.20 ms", True)
    assert "windows 4.00, 6.00, 4.20 ms; garbage collector 0.10 ms of it" in ten.note
    assert by_name["server CPU per cycle, 100 sessions (MCP clients)"].value == "6.30 ms"
    assert rates == {10: 100.0, 100: 100.0}
    rate_100 = by_name["throughput, 100 concurrent sessions (MCP clients)"]
    assert (rate_100.target, rate_100.met) == (">= 1000 cycles/s", False)
    assert by_name["throughput, 10 concurrent sessions (MCP clients)"].met is None


def test_without_both_10_and_100_sessions_there_is_no_growth_row() -> None:
    rows, _ = throughput_rows("postgres", {1: [_window(7.0, 0.1)]}, 5.0, 1.0)
    assert [row.name for row in rows] == [
        "throughput, 1 concurrent sessions (MCP clients)",
        "server CPU per cycle, 1 sessions (MCP clients)",
    ]
    assert rows[1].met is False
