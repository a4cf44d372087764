"""The forked servers of the modules tests/untraced.py names run without coverage's tracer (and
their built-in agents too); every other module's are traced as before."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import agent_forks, forked_child, forkserver
from tests.e2e.harness import running_server
from tests.untraced import COVERAGE_HANDOFF, UNTRACED_SERVERS, servers_traced

ROOT = Path(__file__).resolve().parent.parent


def test_every_untraced_entry_names_a_test_folder_or_module_that_exists() -> None:
    for entry in UNTRACED_SERVERS:
        path = ROOT / entry
        assert path.is_dir() if entry.endswith("/") else path.is_file(), entry


def test_a_listed_module_or_package_is_untraced_and_the_rest_traced() -> None:
    assert not servers_traced("tests/browser/test_inbox.py::test_x")
    assert not servers_traced("tests/e2e/test_soak.py::test_x[sqlite]")
    assert servers_traced("tests/e2e/test_cluster_slack.py::test_x")
    assert servers_traced("tests/e2e/test_soak_other.py::test_x")  # a prefix of a name is not it


def test_stopping_a_measurement_stops_its_tracer_and_saves_nothing() -> None:
    calls: list[str] = []
    measurement: Any = SimpleNamespace(
        stop=lambda: calls.append("stop"), save=lambda: calls.append("save")
    )

    forked_child.stop_measuring(measurement)
    measurement.save()  # what its exit hook would call

    assert calls == ["stop"]
    forked_child.stop_measuring(None)  # not measured: nothing to stop


def test_an_untraced_servers_agent_is_asked_for_untraced_and_a_traced_ones_as_before() -> None:
    traced = agent_forks.shim_command("/run/z")
    untraced = agent_forks.shim_command("/run/z", traced=False)
    assert traced[-2:] == untraced[-2:] == ("-m", agent_forks.MODULE)
    assert agent_forks.UNTRACED_FLAG not in traced
    assert untraced[untraced.index("/run/z") + 1] == agent_forks.UNTRACED_FLAG


def _data_files_of(pid: int) -> list[Path]:
    import coverage

    current = coverage.Coverage.current()
    assert current is not None
    data = Path(current.config.data_file)
    return list(data.parent.glob(f"{data.name}.*pid{pid}.*"))


@pytest.mark.skipif(
    not any(name in os.environ for name in COVERAGE_HANDOFF) or not forkserver.enabled(),
    reason="only a suite run under coverage, with forked servers, measures them",
)
@pytest.mark.parametrize("traced", [True, False])
def test_a_forked_server_writes_coverage_data_only_when_traced(
    tmp_path: Path, traced: bool
) -> None:
    forkserver.trace_children(traced)
    try:
        with running_server(tmp_path) as server:
            server.create_task()
            assert server.proc is not None
            pid = server.proc.pid
    finally:
        forkserver.trace_children(True)

    assert bool(_data_files_of(pid)) == traced
