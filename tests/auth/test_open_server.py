"""Access control off (the default): all open on loopback; off loopback it must be asked for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import FAST_TIMEOUTS, ServerProcess, recv_until, running_server
from tests.ports import free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("open")) as server:
        yield server


def test_without_auth_every_caller_sees_everything_in_the_default_workspace(
    open_server: ServerProcess,
) -> None:
    created = open_server.ok("POST", "/tasks", 201, json={"title": "open"})["task"]
    assert created["workspace"] == "default"
    stranger = {"Authorization": "Bearer whatever"}  # ignored when access control is off
    listed = open_server.ok("GET", "/tasks", headers=stranger)["tasks"]
    assert created["id"] in [t["id"] for t in listed]
    assert open_server.ok("GET", f"/tasks/{created['id']}")["task"]["id"] == created["id"]
    with open_server.websocket() as ws:
        ws.send('{"type": "request", "id": "p", "action": "ping", "payload": {}}')
        assert recv_until(ws, lambda m: m.get("id") == "p")["payload"] == {"pong": True}


def test_login_without_auth_sets_no_cookie(open_server: ServerProcess) -> None:
    response = open_server.request("POST", "/login", json={"token": "anything"})
    assert response.status_code == 200 and response.json()["auth"] is False
    assert "set-cookie" not in response.headers


def _serve(tmp_path: Path, *flags: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clarion",
            "serve",
            "--port",
            str(free_port()),
            "--database",
            f"sqlite:///{tmp_path / 'c.db'}",
            *flags,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            **FAST_TIMEOUTS,
            "CLARION_NO_SAMPLE": "1",
            "CLARION_HOME": str(tmp_path),
            "PATH": "/usr/bin:/bin",
        },
        start_new_session=True,
    )


def test_a_non_loopback_host_without_auth_refuses_to_start(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "--host", "0.0.0.0")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert b"--auth" in err and b"--insecure-no-auth" in err


def test_a_non_loopback_host_starts_with_insecure_no_auth(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "--host", "0.0.0.0", "--insecure-no-auth")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the announcement comes once it listens
        assert b"Clarion is listening" in line, proc.stderr.read() if proc.stderr else b""
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
