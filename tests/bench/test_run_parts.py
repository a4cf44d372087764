"""Which parts a benchmark run takes, and the time each part says it took."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from bench.context import part, parts_summary

from bench import cluster, host_speed, run, sandbox_start, statements, workspaces


def _record(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every part of bench.run replaced by one that records its name."""
    taken: list[str] = []

    def stub(name: str) -> Any:
        async def measured(*args: Any, **kwargs: Any) -> list[Any]:
            taken.append(name)
            return []

        return measured

    for name in (
        "_idle_agents",
        "_memory",
        "_online",
        "_growth",
        "_recovery",
        "_feature_costs",
        "_live_sessions",
    ):
        monkeypatch.setattr(run, name, stub(name))
    monkeypatch.setattr(statements, "rows", stub("statements"))
    monkeypatch.setattr(sandbox_start, "rows", stub("sandbox"))
    monkeypatch.setattr(workspaces, "rows", stub("workspaces"))
    monkeypatch.setattr(cluster, "rows", stub("cluster"))
    monkeypatch.setattr(run, "_service_peers", stub("service peers"))
    monkeypatch.setattr(run, "_peer", lambda *args: taken.append("peer"))
    return taken


async def test_the_default_run_leaves_the_idle_agents_to_their_own_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _record(monkeypatch)
    await run.main_async(run.QUICK, ["sqlite"], tmp_path)
    assert "_idle_agents" not in taken
    assert taken == [
        "_memory",
        "_online",
        "statements",
        "_growth",
        "_recovery",
        "sandbox",
        "workspaces",
        "_feature_costs",
        "peer",
        "service peers",
    ]
    taken.clear()
    await run.main_async(run.QUICK, ["sqlite"], tmp_path, only="idle-agents")
    assert taken == ["_idle_agents"]


async def test_every_run_opens_with_the_hosts_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(monkeypatch)
    for only in ("all", "workspaces", "sessions1k"):
        rows = (await run.main_async(run.QUICK, ["sqlite"], tmp_path, only=only)).rows
        assert rows, only
        assert rows[0].db == "host", only
        assert rows[0].name.startswith("host speed"), only


async def test_the_host_speed_figures_are_measured_not_assumed() -> None:
    speed = await host_speed.measure(host_speed.QUICK)
    # Each figure is a real duration: positive and finite, the loop's in milliseconds.
    assert 0 < speed.python_ms < 60_000
    assert 0 < speed.syscall_us < 1e6
    assert 0 < speed.echo_us < 1e7
    row = host_speed.row(speed)
    figures = [float(part.split()[0]) for part in row.value.split("; ")]
    assert figures == [
        pytest.approx(speed.python_ms, abs=0.05),
        pytest.approx(speed.syscall_us, abs=0.005),
        pytest.approx(speed.echo_us, abs=0.5),
    ]


def test_a_part_says_its_wall_and_cpu_seconds_and_the_summary_lists_the_longest_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with part("short"):
        pass
    with part("long"):
        time.sleep(0.3)
    err = capsys.readouterr().err
    assert "] long\n" in err
    assert re.search(r"\] long: done in \d+ s \(\d+ CPU-s\)\n", err), err
    parts_summary()
    summary = capsys.readouterr().err
    assert summary.index("  long\n") < summary.index("  short\n")
