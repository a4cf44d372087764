"""Which parts a benchmark run takes, and the time each part says it took."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from bench.context import part, parts_summary

from bench import cluster, run, sandbox_start, statements, workspaces


def _record(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every part of bench.run replaced by one that records its name."""
    taken: list[str] = []

    def stub(name: str) -> Any:
        async def measured(*args: Any, **kwargs: Any) -> list[Any]:
            taken.append(name)
            return []

        return measured

    for name in ("_idle_agents", "_memory", "_online", "_growth", "_recovery", "_feature_costs"):
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
