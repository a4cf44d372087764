"""The README's Quick start, run as written in a fresh clone of the repository.

What this proves: a `git clone` of the committed tree (uncommitted changes are not in a clone)
installs itself from uv.lock with the first command, `make run`, whose server answers
`/healthz` with 200 and shows the first-start sample task; and the second command, `make test`,
installs, lints (ruff, mypy, import layers) and runs pytest in the clone, exiting 0.

What it does not prove: that the full suite passes in the clone. Running all of it here would
include this test and recurse, so the second command runs with `PYTEST_ARGS` (which the
Makefile hands to pytest) narrowed to one small test file. The outer run is the full suite.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.harness import TLS, wait_until
from tests.ports import free_port

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
INNER_PYTEST_ARGS = "tests/config/test_config.py -q -p no:cacheprovider"


def quick_start_commands(readme: str) -> list[str]:
    """The command lines of the first fenced block under `## Quick start`."""
    assert "## Quick start" in readme, "the README has no Quick start section"
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```[a-z]*\n(.*?)```", section, re.S)
    assert block, "no fenced block in the Quick start section"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def _clean_env(tmp_path: Path) -> dict[str, str]:
    # The clone must stand on its own: no venv, Clarion settings or pytest options from here.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLARION_", "PYTEST_", "VIRTUAL_ENV", "UV_", "COVERAGE_"))
    }
    env["CLARION_HOME"] = str(tmp_path / "home")
    env["CLARION_PORT"] = str(free_port())
    return env


def test_quick_start_has_exactly_a_run_and_a_test_command() -> None:
    assert quick_start_commands((ROOT / "README.md").read_text()) == ["make run", "make test"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_readme_commands_work_in_a_fresh_clone(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    run_cmd, test_cmd = quick_start_commands((clone / "README.md").read_text())
    env = _clean_env(tmp_path)
    base = f"http://127.0.0.1:{env['CLARION_PORT']}"

    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            run_cmd, shell=True, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:

        def healthy() -> bool:
            if server.poll() is not None:
                raise AssertionError(f"{run_cmd!r} exited {server.returncode}:\n"
                                     f"{log_path.read_text(errors='replace')}")  # fmt: skip
            try:
                return httpx.get(f"{base}/healthz", timeout=2, verify=TLS).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(healthy, timeout=600, interval=0.5, what=f"{run_cmd!r} to serve /healthz")
        titles = [t["title"] for t in httpx.get(f"{base}/api/v1/tasks", timeout=10).json()["tasks"]]
        assert titles == ["Try Clarion: answer the agent's question"]
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)

    # A warm type-check cache only saves time: mypy re-checks any module whose content differs.
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", clone / ".mypy_cache", dirs_exist_ok=True)
    # One pytest worker for the one small file: four would each start and import for nothing.
    inner = {**env, "PYTEST_ARGS": INNER_PYTEST_ARGS, "PYTEST_WORKERS": "1"}
    tested = subprocess.run(
        test_cmd, shell=True, cwd=clone, env=inner,
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    output = tested.stdout + tested.stderr
    assert tested.returncode == 0, output
    assert re.search(r"\d+ passed", output), output
