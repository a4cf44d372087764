"""Idle agents stop and come back: real `clarion serve` processes whose built-in agent (a real
ACP subprocess) is stopped after a short configured idle time, started again by the next
prompt with `session/load`, killed at a fault point while it restarts, and restarted by a
cluster replica that adopted the session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import RESUME_MARK, replica_id, session_owner, wait_role
from tests.e2e.harness import (
    ServerProcess,
    answer,
    answer_survives_a_crash_while_the_agent_starts,
    wait_until,
)

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]
IDLE_NOTE = "agent stopped while idle; it starts again on the next message"


def _idle_config(workdir: Path, after: str = "2s") -> list[str]:
    config = workdir / "idle.toml"
    config.write_text(f'[agents.builtin]\nagent_idle_stop_after = "{after}"\n')
    return ["--config", str(config)]


def _session(server: ServerProcess, session_id: str) -> dict[str, Any]:
    session: dict[str, Any] = server.ok("GET", f"/task-sessions/{session_id}")["session"]
    return session


def _wait_process(server: ServerProcess, session_id: str, process: str) -> dict[str, Any]:
    found: dict[str, Any] = wait_until(
        lambda: (s := _session(server, session_id))["agent_process"] == process and s,
        timeout=60,
        what=f"agent_process {process}",
    )
    return found


@pytest.mark.parametrize("db", DBS)
def test_an_idle_agent_stops_and_the_next_message_starts_it_with_its_conversation(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.args = _idle_config(server.workdir)
    server.start()
    session_id = server.start_session(server.create_task(), "remember the lighthouse")
    server.wait_for_agent_text(session_id, "Received: remember the lighthouse")

    stopped = _wait_process(server, session_id, "stopped")

    assert stopped["agent"] == "builtin"
    assert stopped["agent_process_note"] == IDLE_NOTE
    assert stopped["state"] == "IDLE" and stopped["error"] is None
    wait_until(lambda: "agent stopped while idle" in server.logs(), what="the stop logged")
    assert not [m for m in server.messages(session_id) if m["type"] == "error"]

    server.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "/scenario recall"})

    server.wait_for_agent_text(session_id, "Remembered: remember the lighthouse")
    starts = [t for t in server.turns(session_id) if t["metadata"].get("lifecycle_only")]
    assert [t["metadata"]["agent_context"] for t in starts] == ["new", "loaded"]
    running = _session(server, session_id)
    assert running["agent_process"] in ("running", "stopped")  # it may idle out again
    assert running["state"] != "FAILED"


@pytest.mark.parametrize("db", DBS)
def test_a_detached_answer_restarts_a_stopped_agent_and_resumes_once(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.args = _idle_config(server.workdir)
    server.start()
    session_id, pending_id = server.detached_question()
    stopped = _wait_process(server, session_id, "stopped")
    assert stopped["state"] == "WAITING_FOR_INPUT"
    assert stopped["pending_action"] == "clarification"

    response = server.respond(pending_id, answer("db", "sqlite"))

    assert response.status_code == 200, response.text
    assert response.json()["resumed"] is True
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.resume_prompts_seen(session_id) == 1


@pytest.mark.parametrize("db", DBS)
def test_a_crash_while_a_stopped_agent_restarts_leaves_the_answer_answerable(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.args = _idle_config(server.workdir)
    server.start(failpoints="resume.agent_ready=crash")
    session_id, pending_id = server.detached_question()
    _wait_process(server, session_id, "stopped")

    answer_survives_a_crash_while_the_agent_starts(server, session_id, pending_id)


@pytest.mark.postgres
def test_a_replica_adopting_a_session_whose_agent_stopped_while_idle_starts_it_for_the_answer(
    expiring_replicas: Callable[..., ServerProcess],
) -> None:
    first = expiring_replicas()
    first.args += _idle_config(first.workdir)
    first.start(wait_ready=False)
    wait_role(first, "active")
    second = expiring_replicas()
    second.args += _idle_config(second.workdir, after="0")
    second.start(wait_ready=False)
    wait_role(second, "active")
    session_id, pending_id = first.detached_question()
    assert session_owner(first, session_id) == replica_id(first)
    _wait_process(first, session_id, "stopped")
    # Any replica reads the stop from the session's record.
    assert _session(second, session_id)["agent_process_note"] == IDLE_NOTE

    first.kill()
    second_id = replica_id(second)
    wait_until(
        lambda: session_owner(second, session_id) == second_id,
        timeout=60,
        what="the survivor adopting the session",
    )
    response = second.respond(pending_id, answer("db", "sqlite"))

    assert response.status_code == 200, response.text
    assert response.json()["resumed"] is True
    second.wait_for_agent_text(session_id, RESUME_MARK)
    assert second.resume_prompts_seen(session_id) == 1
    adopted = _session(second, session_id)
    assert adopted["agent_process"] == "running"
    assert adopted["agent_process_note"] is None
