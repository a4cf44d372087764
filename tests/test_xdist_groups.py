"""Tests sharing a module's or package's fixture run on one pytest worker (tests/xdist_groups.py
restores `--dist loadgroup`'s grouping under pytest 9.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]

# Each test writes the worker it ran on; two groups of four tests, and four loose tests.
_MODULE = """
import json, os, pathlib, pytest

pytestmark = pytest.mark.xdist_group({group!r})

@pytest.mark.parametrize("n", range(4))
def test_where(n):
    out = pathlib.Path({out!r}) / f"{{__name__}}-{{n}}.json"
    out.write_text(json.dumps(os.environ["PYTEST_XDIST_WORKER"]))
"""
_LOOSE = """
import time

def test_a(): time.sleep(0.2)
def test_b(): time.sleep(0.2)
def test_c(): time.sleep(0.2)
def test_d(): time.sleep(0.2)
"""


def test_a_groups_tests_run_on_one_worker_each(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner run loads the plugin from here
    out = tmp_path / "where"
    out.mkdir()
    pytester.makepyfile(
        test_first=_MODULE.format(group="first", out=str(out)),
        test_second=_MODULE.format(group="second", out=str(out)),
        test_loose=_LOOSE,
    )
    result = pytester.runpytest_subprocess(
        "-n", "3", "--dist", "loadgroup", "-p", "tests.xdist_groups", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=12)
    workers: dict[str, set[str]] = {"first": set(), "second": set()}
    for path in out.iterdir():
        workers[path.name.split("-")[0].removeprefix("test_")].add(json.loads(path.read_text()))
    assert [len(workers["first"]), len(workers["second"])] == [1, 1], workers
