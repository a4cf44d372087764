"""Agent failures a person can see: a profile that cannot start, a prompt that errors, and an
agent process that exits on its own, each through a real server and a real agent process."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import ServerProcess, running_server, wait_until
from tests.e2e.permission_steps import (
    builtin_command,
    decide,
    error_rows,
    permission,
    session,
    wait_for_permission,
    wait_for_session_state,
    write_config,
)

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]

NO_KEY = "error: ANTHROPIC_API_KEY is not set"


def _failing_profiles(workdir: Path) -> str:
    quits = f"import sys; sys.stderr.write({NO_KEY!r} + '\\n'); sys.exit(1)"
    silent = "import time; time.sleep(600)"
    return write_config(
        workdir,
        f"""
[agents.nokey]
command = ["{sys.executable}", "-c", "{quits}"]

[agents.silent]
command = ["{sys.executable}", "-c", "{silent}"]
start_timeout_s = 1

[agents.good]
command = {builtin_command()}
""",
    )


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the module (its tests use tasks and sessions of their own), with profiles
    that fail besides the built-in agent."""
    tmp = tmp_path_factory.mktemp("failing")
    with running_server(tmp, CLARION_CONFIG=_failing_profiles(tmp)) as server:
        yield server


def _server_on(
    db: str, failing: ServerProcess, make_server: Callable[..., ServerProcess]
) -> ServerProcess:
    """The module's server for SQLite, a server of its own for PostgreSQL."""
    if db == "sqlite":
        return failing
    server = make_server(db=db)
    server.start()
    return server


def _start_refused(server: ServerProcess, agent: str) -> tuple[str, dict[str, object]]:
    task_id = server.create_task()
    response = server.request(
        "POST", f"/tasks/{task_id}/task-sessions", json={"agent": agent, "prompt": "hello"}
    )
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "agent_unavailable" and error["retryable"] is False
    return task_id, error


def test_an_agent_that_exits_at_start_fails_its_session_and_says_why(
    failing: ServerProcess,
) -> None:
    task_id, error = _start_refused(failing, "nokey")

    session_id = str(error["session_id"])
    failed = session(failing, session_id)
    assert failed["state"] == "FAILED"
    assert "exited with code 1" in failed["error"]
    assert NO_KEY not in failed["error"]  # the field is the sentence; stderr is in the row
    [row] = error_rows(failing, session_id)
    assert row["author_type"] == "system"
    assert row["content"].startswith(failed["error"])
    assert NO_KEY in row["content"]
    assert row["metadata"]["phase"] == "start"
    assert row["metadata"]["exit_code"] == 1
    sessions = failing.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"]
    assert [s["state"] for s in sessions] == ["FAILED"]


def test_retrying_a_failed_start_leaves_no_idle_sessions(failing: ServerProcess) -> None:
    task_id = failing.create_task()
    for _ in range(2):
        response = failing.request(
            "POST", f"/tasks/{task_id}/task-sessions", json={"agent": "nokey", "prompt": "hi"}
        )
        assert response.status_code == 409
    sessions = failing.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"]
    assert len(sessions) == 2
    assert {s["state"] for s in sessions} == {"FAILED"}


def test_an_agent_that_never_answers_initialize_fails_after_its_start_timeout(
    failing: ServerProcess,
) -> None:
    _, error = _start_refused(failing, "silent")

    session_id = str(error["session_id"])
    failed = session(failing, session_id)
    assert failed["state"] == "FAILED"
    assert "did not answer within 1 s" in failed["error"]
    [row] = error_rows(failing, session_id)
    assert row["metadata"]["phase"] == "start"


@pytest.mark.parametrize("db", DBS)
def test_an_errored_prompt_is_shown_and_leaves_the_session_usable(
    make_server: Callable[..., ServerProcess], failing: ServerProcess, db: str
) -> None:
    server = _server_on(db, failing, make_server)
    session_id = server.start_session(server.create_task(), "/scenario fail quota exceeded")

    row = wait_until(lambda: next(iter(error_rows(server, session_id)), None), what="error row")

    assert row["author_type"] == "system"
    assert row["metadata"]["phase"] == "prompt"
    assert row["metadata"]["stop_reason"] == "error"
    assert row["turn_id"] == server.turns(session_id)[-1]["id"]
    idle = wait_for_session_state(server, session_id, "IDLE")
    assert idle["error"] and idle["error"] in row["content"]
    server.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "again"})
    server.wait_for_agent_text(session_id, "Received: again")


@pytest.mark.parametrize("db", DBS)
def test_an_agent_that_exits_on_its_own_fails_only_its_own_session(
    make_server: Callable[..., ServerProcess], failing: ServerProcess, db: str
) -> None:
    server = _server_on(db, failing, make_server)
    task_id = server.create_task()
    session_id = server.start_session(task_id, "/scenario permission")
    request = wait_for_permission(server, session_id)
    # Another session of the task, whose agent dies in the middle of its turn.
    other = server.start_session(task_id, "/scenario exit code=7 out of memory")

    failed = wait_for_session_state(server, other, "FAILED")
    assert "exited unexpectedly with code 7" in failed["error"]
    [row] = error_rows(server, other)
    assert row["metadata"] == {"phase": "process", "exit_code": 7}
    assert "out of memory" in row["content"]
    # The other session's request is untouched by that exit: it is decided normally.
    assert decide(server, request["id"], {"option_id": "allow"}).status_code == 200
    server.wait_for_agent_text(session_id, "Permission: allow")


def _agent_pids(server: ServerProcess) -> list[int]:
    """The built-in agent processes this server started (Linux: read from /proc)."""
    assert server.proc is not None
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == server.proc.pid and b"clarion.agents.builtin" in cmdline:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_an_agent_killed_while_a_request_waits_cancels_it_and_fails_the_session(
    server: ServerProcess,
) -> None:
    session_id = server.start_session(server.create_task(), "/scenario permission")
    request = wait_for_permission(server, session_id)
    [pid] = _agent_pids(server)

    os.kill(pid, signal.SIGKILL)

    failed = wait_for_session_state(server, session_id, "FAILED")
    assert failed["pending_action"] is None
    view = permission(server, request["id"])
    assert view["state"] == "cancelled"
    response = decide(server, request["id"], {"option_id": "allow"})
    assert response.status_code == 409 and response.json()["error"]["state"] == "cancelled"
    [row] = error_rows(server, session_id)
    assert row["metadata"]["phase"] == "process"
    assert row["metadata"]["exit_code"] == -signal.SIGKILL
