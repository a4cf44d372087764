"""`scripts/coverage_floor.py`: the per-package coverage report `make test` prints and its floors.

Each case measures a small stand-in `clarion` package in its own directory, in a child process
(the suite itself may be running under coverage, and one process holds one tracer).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "coverage_floor.py"

RULES = """\
def pick(flag):
    if flag:
        return "yes"
    return "no"
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}


def _measure(tmp_path: Path, *calls: bool) -> Path:
    """A project with `clarion.domain.rules` measured while `pick` runs with `calls`."""
    package = tmp_path / "src" / "clarion" / "domain"
    package.mkdir(parents=True)
    (tmp_path / "src" / "clarion" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "rules.py").write_text(RULES)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.coverage.run]\nbranch = true\nsource = ["src/clarion"]\n'
    )
    program = textwrap.dedent(
        f"""
        import coverage, sys
        sys.path.insert(0, "src")
        cov = coverage.Coverage()
        cov.start()
        from clarion.domain.rules import pick
        for flag in {list(calls)!r}:
            pick(flag)
        cov.stop()
        cov.save()
        """
    )
    subprocess.run(
        [sys.executable, "-c", program], cwd=tmp_path, env=_env(), check=True, timeout=60
    )
    return tmp_path


def _floor(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_report_prints_each_package_and_the_total(tmp_path: Path) -> None:
    result = _floor(_measure(tmp_path, True, False))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:2] == ["domain", "100.0%"] for line in lines), result.stdout
    assert any(line.split()[:2] == ["TOTAL", "100.0%"] for line in lines), result.stdout


def test_a_package_below_its_floor_fails_the_check(tmp_path: Path) -> None:
    result = _floor(_measure(tmp_path, True), "--check")
    assert result.returncode == 1
    assert "domain:" in result.stdout
    assert "below its floor of 100.0%" in result.stdout


def test_without_check_the_report_is_printed_but_never_fails(tmp_path: Path) -> None:
    # A run narrowed by PYTEST_ARGS measures only part of the code.
    result = _floor(_measure(tmp_path, True))
    assert result.returncode == 0
    assert "domain" in result.stdout


def test_the_check_passes_when_every_measured_package_meets_its_floor(tmp_path: Path) -> None:
    result = _floor(_measure(tmp_path, True, False), "--check")
    assert result.returncode == 0, result.stdout
