"""The suite's CPU report (tests/cpu_report.py): each test's CPU, its reaped children's
included, printed largest first with the total and the share of the cores."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]


def test_the_report_lists_tests_largest_first_counting_the_children_they_reaped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner run loads the plugin from here
    pytester.makepyfile(
        test_work="""
        import subprocess, sys

        def test_spins_in_a_child():
            code = (
                "import time\\n"
                "end = time.process_time() + 0.3\\n"
                "while time.process_time() < end: pass"
            )
            subprocess.run([sys.executable, "-c", code], check=True)

        def test_does_nothing():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "tests.cpu_report", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "largest CPU consumers" in out
    lines = re.findall(r"^\s*([\d.]+)s cpu (\S+)$", out, re.M)
    assert [name for _, name in lines] == [
        "test_work.py::test_spins_in_a_child",
        "test_work.py::test_does_nothing",
    ]
    assert float(lines[0][0]) >= 0.3  # the child's CPU counts against the test that reaped it
    assert re.search(r"cpu in all, 2 tests, over \d+ s: \d+% of \d+ cores", out)
