"""Schemathesis, with every check, against a real `clarion serve` described by its own
/openapi.json: zero failures and zero 5xx, with access control off and on.

The run is bounded (a fixed seed and a few examples per operation) so it stays well under a
minute; a seeded task and session give the fuzzer real ids, so operations get past 404.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.auth.conftest import bearer, create_token
from tests.e2e.harness import ServerProcess, running_server
from tests.hardening.conftest import assert_no_traceback
from tests.untraced import untraced

pytestmark = pytest.mark.e2e

EXAMPLES = 6
SEED = 18


@pytest.fixture(params=[False, True], ids=["open", "auth"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    with running_server(tmp_path, args=["--auth"] if request.param else []) as server:
        if request.param:
            server.headers = bearer(create_token(server.database_url, "fuzzer", "lab", tmp_path))
        yield server


# Alone it takes ~15 s per mode; the ceiling is for a loaded machine running the whole suite.
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_schemathesis_finds_nothing(target: ServerProcess, tmp_path: Path) -> None:
    task_id = target.create_task("seeded for the fuzzer")
    session_id = target.start_session(task_id, "hello", agent="builtin")
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        f'[parameters]\n"path.task_id" = "{task_id}"\n"path.session_id" = "{session_id}"\n'
    )
    headers = [arg for k, v in target.headers.items() for arg in ("-H", f"{k}: {v}")]
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("schemathesis")),
            "--config-file",
            str(config),
            "run",
            f"{target.url}/openapi.json",
            "--checks",
            "all",
            "--max-examples",
            str(EXAMPLES),
            "--seed",
            str(SEED),
            "--request-timeout",
            "30",
            "--no-color",
            *headers,
        ],
        capture_output=True,
        text=True,
        timeout=360,
        cwd=tmp_path,  # its cache stays in the test's own directory
        env=untraced(os.environ),  # the fuzzer runs no Clarion code
        check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-6000:]
    assert " passed" in report and "failure" not in report, report[-3000:]
    assert target.ok("GET", "/tasks")["total"] >= 1  # still serving
    assert_no_traceback(target)
    assert "status=5" not in target.logs()
