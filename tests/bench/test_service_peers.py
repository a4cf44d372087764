"""The service peers' rows (Restate, LangGraph Server) get their figures, at tiny counts.

Each peer installs from the lockfiles in its own folder of bench/ on first use; where that
fails the row says why, and the test fails with that reason where services are required (CI),
and skips elsewhere."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bench.service_peer_rows import PEERS, goal_rows, rows
from bench.service_peers import PeerFigures, Window

from tests.bench.load import host_load, smoke_ceiling
from tests.conftest import services_required

pytestmark = pytest.mark.e2e


def _installed(name: str) -> None:
    problem = PEERS[name][0]()
    if problem is not None:
        if services_required():
            pytest.fail(f"the {name} peer cannot be installed from its lockfiles: {problem}")
        pytest.skip(problem)


async def _rows_of(name: str, tmp_path: Path, samples: int) -> dict[str, str]:
    _installed(name)
    only = {name: PEERS[name]}
    out, figures = await asyncio.wait_for(
        rows(tmp_path, {name: samples}, (1, 2), 0.2, 0.0, {name: 1}, peers=only),
        smoke_ceiling(120, host_load()),
    )
    assert list(figures) == [name]
    return {row.name: row.value for row in out}


async def test_restate_rows_give_the_round_trip_and_each_concurrency_a_figure(
    tmp_path: Path,
) -> None:
    values = await _rows_of("restate", tmp_path, 2)
    assert values["resolve awakeable -> next awakeable published p50"].endswith(" ms")
    for n in (1, 2):
        rate, cpu = values[f"cycles/s, {n} concurrent; server-side CPU per cycle"].split("; ")
        assert float(rate) > 0 and cpu.endswith(" ms")


@pytest.mark.slow
async def test_langgraph_server_rows_give_the_round_trip_and_each_concurrency_a_figure(
    tmp_path: Path,
) -> None:
    values = await _rows_of("langgraph-server", tmp_path, 1)
    assert values["resume POST runs/wait -> next interrupt returned p50"].endswith(" ms")
    for n in (1, 2):
        rate, _ = values[f"cycles/s, {n} concurrent; server-side CPU per cycle"].split("; ")
        assert float(rate) > 0


def _restate(round_trip_s: float, rate: float, cpu_s: float) -> PeerFigures:
    w = Window(rate, 100, cpu_s, 0.0001, (cpu_s * 0.6, cpu_s * 0.4))
    return PeerFigures("restate", [round_trip_s], {1: [w], 10: [w], 100: [w]})


def test_goal_rows_judge_clarion_against_restate_per_database() -> None:
    judged = goal_rows(
        _restate(0.004, 300.0, 0.004),
        {"sqlite": 0.003, "postgres": 0.006},
        {"sqlite": {10: 400.0, 100: 250.0}, "postgres": {10: 300.0}},
        {"sqlite": {10: 0.005, 100: 0.003}},
    )
    by_name = {(row.db, row.name): row for row in judged}
    latency = "ratio: live tool return p50 / restate resolve -> next awakeable p50"
    assert by_name[("sqlite", latency)].met is True
    assert (
        by_name[("postgres", latency)].value == "1.50x" and not by_name[("postgres", latency)].met
    )
    assert by_name[("sqlite", "ratio: cycles/s, 10 sessions / restate's, 10 workflows")].met
    assert not by_name[("sqlite", "ratio: cycles/s, 100 sessions / restate's, 100 workflows")].met
    assert ("postgres", "ratio: cycles/s, 100 sessions / restate's, 100 workflows") not in by_name
    cpu = "ratio: server CPU per cycle, {} sessions / restate's whole server side"
    assert by_name[("sqlite", cpu.format(10))].value == "1.25x"
    assert not by_name[("sqlite", cpu.format(10))].met
    assert by_name[("sqlite", cpu.format(100))].met


def test_a_peer_whose_lockfile_cannot_be_synced_says_why(tmp_path: Path) -> None:
    from bench import peer_envs

    folder = tmp_path / "nopeer"
    folder.mkdir()
    problem = peer_envs.uv_sync(folder, folder / ".venv/bin/python")
    assert problem is not None and problem.startswith("uv sync in bench/nopeer failed")
