"""The CPU each test costs, printed at the end beside the slowest tests (`--durations`).

On a shared or loaded machine wall time says little; CPU seconds say what a test costs the suite.
A test's figure is the user+sys time of the pytest process (all its threads) over its setup, call
and teardown, plus that of the children it reaped meanwhile: `clarion serve`, the CLI, the agents
a server starts (a server reaps its agents, so they count in its figure), and what the fork
server reported meanwhile (tests/forkserver.py): the forked servers and their built-in agents
that ended, which the zygote reaps, and the zygote's own CPU. A server shared by a module
counts against the test whose teardown stops it. A child that is never reaped counts nowhere.
Under xdist each worker measures its own tests and the figure travels to the controller in the
report's `user_properties`. With CLARION_CPU_REPORT=FILE every test's figure, and its wall time
(setup, call and teardown), is written there as JSON, to add up by module, package or xdist group.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator

import pytest

from tests import forkserver

PROPERTY = "cpu_s"
SHOWN = 20
_started: dict[str, float] = {}
_totals: dict[str, float] = {}
_walls: dict[str, float] = {}
_began: list[float] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    _began.append(time.monotonic())


def cpu_seconds() -> float:
    """User+sys CPU of this process and of the children it has reaped."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    forked = forkserver.reaped_cpu()  # servers are the zygote's children, not ours
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + forked


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _started[item.nodeid] = cpu_seconds()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "teardown" and item.nodeid in _started:
        report.user_properties.append((PROPERTY, cpu_seconds() - _started.pop(item.nodeid)))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _walls[report.nodeid] = _walls.get(report.nodeid, 0.0) + report.duration
    for name, value in report.user_properties:
        if name == PROPERTY and isinstance(value, float):
            _totals[report.nodeid] = _totals.get(report.nodeid, 0.0) + value


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _totals:
        return
    total = sum(_totals.values())
    dump = os.environ.get("CLARION_CPU_REPORT")
    if dump:  # every test's figure, for adding up by module or package
        with open(dump, "w", encoding="utf-8") as out:
            json.dump({"cpu_s": _totals, "wall_s": _walls}, out, indent=0, sort_keys=True)
    terminalreporter.write_sep("=", f"{SHOWN} largest CPU consumers")
    for nodeid, seconds in sorted(_totals.items(), key=lambda kv: -kv[1])[:SHOWN]:
        terminalreporter.write_line(f"{seconds:8.2f}s cpu {nodeid}")
    # Against the machine: far below 100% of the cores, the suite waits more than it computes,
    # and more workers (PYTEST_WORKERS) would overlap the waits.
    wall = time.monotonic() - _began[0]
    cores = os.cpu_count() or 1
    terminalreporter.write_line(
        f"{total:8.2f}s cpu in all, {len(_totals)} tests, over {wall:.0f} s: "
        f"{total / (wall * cores):.0%} of {cores} cores"
    )
