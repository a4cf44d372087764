"""The live-sessions rows: a few sessions hold their questions over MCP streams while answers
arrive at a steady rate, and every row gets a figure (tiny sizes, no timing asserted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bench.relay_hub import socat
from bench.sessions1k import ManyResult, ManySizes, Window, measure
from bench.sessions1k_rows import rows

from tests.bench.load import host_load, smoke_ceiling
from tests.conftest import services_required

pytestmark = pytest.mark.e2e

TINY = ManySizes(sessions=5, baseline=2, rate=20.0, window_s=0.3, idle_s=1.0, keepalive_s=0.3)


def _window(sessions: int, cpu_ms: float) -> Window:
    return Window(sessions, 100, 5.0, cpu_ms / 10, 0.01, (0.004, 0.005, 0.006))


def test_the_rows_judge_memory_keepalive_growth_and_drops_against_their_goals() -> None:
    result = ManyResult(
        "sqlite",
        ManySizes(),
        rss_empty=100 * 2**20,
        rss_waiting=310 * 2**20,
        rss_peak=320 * 2**20,
        windows=[_window(10, 5.0), _window(1000, 5.4)],
        idle_cpu=0.012,
        keepalives=3000,
        dropped=["s1: connection gone"],
    )
    by_name = {row.name: row for row in rows(result)}
    rss = by_name["server RSS, 1000 live sessions holding a question (MCP streams)"]
    assert (rss.value, rss.met) == ("310 MiB", False)
    assert "+215 KiB per session" in rss.note
    idle = by_name["server keepalive CPU, 1000 live sessions all waiting"]
    assert (idle.value, idle.met) == ("1.20% of a core", True)
    assert "3000 progress notifications received" in idle.note
    growth = by_name["server CPU per cycle, 1000 live sessions vs 10"]
    assert (growth.value, growth.met) == ("1.08x", True)
    dropped = by_name["dropped MCP streams, 1000 live sessions"]
    assert (dropped.value, dropped.met, dropped.note) == ("1", False, "s1: connection gone")


def test_a_keepalive_cpu_shown_as_exactly_the_goal_is_met() -> None:
    result = ManyResult("postgres", ManySizes(), windows=[_window(10, 5.0), _window(1000, 5.0)])
    result.idle_cpu = 0.0200000001
    idle = next(row for row in rows(result) if row.name.startswith("server keepalive CPU"))
    assert (idle.value, idle.met) == ("2.00% of a core", True)


async def test_every_live_sessions_row_has_a_figure_and_no_stream_drops(tmp_path: Path) -> None:
    if socat() is None:  # .ci/run installs it; elsewhere the row cannot run without it
        if services_required():
            pytest.fail("socat is not installed: the live-sessions row relays agents with it")
        pytest.skip("socat is not installed")
    result = await asyncio.wait_for(
        measure("sqlite", tmp_path, TINY), smoke_ceiling(120, host_load())
    )
    assert result.dropped == []
    assert result.keepalives > 0  # every waiting call was kept alive in the quiet window
    assert [w.sessions for w in result.windows] == [2, 5]
    assert all(w.cycles == 6 and w.server_cpu > 0 for w in result.windows)
    measured = rows(result)
    assert [row.met for row in measured][-1] is True
    assert all(row.value for row in measured)
