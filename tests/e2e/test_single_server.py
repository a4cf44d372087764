"""One single-mode server per database: a second `clarion serve` on the same database refuses
to start (exit 3, one line naming the first), and a killed server's lock is gone with it."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import forkserver
from tests.e2e.harness import ServerProcess

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.mark.parametrize("db", DBS)
def test_a_second_server_on_the_same_database_refuses_to_start(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    first = make_server(db=db)
    first.start()
    task_id = first.create_task("kept")
    second = ServerProcess(database_url=first.database_url, workdir=first.workdir / "second")
    second.workdir.mkdir()
    try:
        second.start(wait_ready=False)
        assert second.wait_exit(timeout=180) == 3
        lines = [line for line in second.logs().splitlines() if line.startswith("clarion:")]
        assert len(lines) == 1, second.logs()
        assert first.proc is not None and f"pid {first.proc.pid}" in lines[0]
        assert "host " in lines[0]
        assert first.ok("GET", f"/tasks/{task_id}")["task"]["title"] == "kept"

        first.kill()  # SIGKILL: nothing is cleaned up, the lock goes with the process
        second.start()
        assert second.ok("GET", f"/tasks/{task_id}")["task"]["title"] == "kept"
    finally:
        second.kill()


def _serve_once(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLARION_HOME": str(tmp_path / "home"), "CLARION_NO_SAMPLE": "1"}
    return forkserver.run(["serve", "--port", "0", *args], env=env, cwd=tmp_path, timeout=120)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_database_is_one_line_naming_it_without_its_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql://clarion:hunter2@127.0.0.1:{_closed_port()}/clarion"
    done = _serve_once(tmp_path, "--database", url)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("clarion:")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("clarion: cannot reach the database at postgresql://clarion:***@")
    assert "hunter2" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "cluster",
    [
        pytest.param(False, id="single"),
        pytest.param(True, id="cluster", marks=pytest.mark.postgres),
    ],
)
def test_an_unreachable_nats_is_one_line_naming_it(
    tmp_path: Path, cluster: bool, request: pytest.FixtureRequest
) -> None:
    bus = f"nats://127.0.0.1:{_closed_port()}"
    if cluster:
        db: str = request.getfixturevalue("cluster_db")
        args = ["--cluster", "--database", db, "--bus", bus]
    else:
        args = ["--database", f"sqlite:///{tmp_path / 'c.db'}", "--bus", bus]
    done = _serve_once(tmp_path, *args)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("clarion:")]
    # The line names the attempts' own error (the refusal), not the client's NoServersError.
    [line] = lines
    assert line.startswith(f"clarion: cannot connect to NATS at {bus}: ConnectionRefusedError(")
    assert done.stderr.count("NATS client error") == 1, done.stderr
    assert "Traceback" not in done.stderr
