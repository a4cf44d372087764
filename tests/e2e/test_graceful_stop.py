"""SIGTERM and SIGINT are one graceful stop: a real signal to a real `clarion serve`.

The server stops admitting, detaches the questions agents wait on (they stay answerable),
stops its agents itself (each exits 0 on the end of its input, long before the guard that
kills an orphaned agent's group would), flushes its spans and exits 0. A cluster replica
leaves cleanly, so a peer adopts its sessions at once instead of after the heartbeat timeout.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from tests.e2e.cluster import session_owner, wait_role
from tests.e2e.harness import RESUME_MARK, ServerProcess, answer, wait_until
from tests.e2e.otlp_receiver import otlp_receiver

pytestmark = pytest.mark.e2e

CLEAN_AGENT_STOP = "agent stopped (exit code 0)"


def _traced(server: ServerProcess, endpoint: str) -> None:
    config = server.workdir / "clarion.toml"
    config.write_text(f'[telemetry]\nexporter = "otlp"\nendpoint = "{endpoint}"\n')
    server.args += ["--config", str(config)]


def _signal(server: ServerProcess, sig: signal.Signals) -> int:
    """Send `sig` to the server process alone (as Kubernetes does to a container's first
    process) and return its exit status."""
    assert server.proc is not None
    os.kill(server.proc.pid, sig)
    return server.wait_exit(timeout=120)


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_sigterm_stops_agents_cleanly_flushes_spans_detaches_questions_and_exits_0(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db)
    with otlp_receiver() as collector:
        _traced(server, collector.url)
        server.start()
        answered_session, answered = server.live_question()
        waiting_session, waiting = server.live_question()
        response = server.respond(answered, answer("db", "sqlite"))
        assert response.status_code == 200, response.text
        server.wait_for_agent_text(answered_session, "You answered")

        # At once after the answer: its spans are still queued in the batch processor.
        assert _signal(server, signal.SIGTERM) == 0
        logs = server.logs()
        assert "stopping gracefully signal=SIGTERM" in logs
        assert logs.count(CLEAN_AGENT_STOP) == 2, logs
        assert "server stopped signal=SIGTERM" in logs
        assert "Traceback" not in logs
        names = collector.span_names
        assert "respond" in names and "ask" in names, names

    # The question the agent waited on was detached by the stop, durably, and stays answerable.
    server.start()
    assert server.bundle(waiting)["state"] == "active_detached"
    again = server.respond(waiting, answer("db", "postgres"))
    assert again.status_code == 200, again.text
    assert again.json()["resumed"] is True
    server.wait_for_agent_text(waiting_session, RESUME_MARK)


def test_sigint_is_the_same_graceful_stop(make_server: Callable[..., ServerProcess]) -> None:
    server = make_server()
    server.start()
    _, pending_id = server.live_question()
    started = time.monotonic()
    assert _signal(server, signal.SIGINT) == 0
    # Neither the agent's open tool call nor its MCP event stream holds the stop.
    assert time.monotonic() - started < 60
    logs = server.logs()
    assert "stopping gracefully signal=SIGINT" in logs
    assert CLEAN_AGENT_STOP in logs
    assert "timeout graceful shutdown exceeded" not in logs
    server.start()
    assert server.bundle(pending_id)["state"] == "active_detached"


def test_a_second_signal_while_stopping_exits_at_once_with_128_plus_its_number(
    make_server: Callable[..., ServerProcess],
) -> None:
    server = make_server()
    server.start()
    server.live_question()
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGTERM)
    os.kill(server.proc.pid, signal.SIGTERM)
    status = server.wait_exit(timeout=120)
    # Either the second signal found the stop under way (143), or the first stop had
    # already ended before it was handled (0); never a signal death or a traceback.
    assert status in (0, 128 + signal.SIGTERM)
    assert "Traceback" not in server.logs()


def test_a_sigtermed_replica_leaves_and_a_peer_adopts_its_sessions_at_once(
    replicas: Callable[..., ServerProcess],
) -> None:
    # A heartbeat timeout far longer than the ceiling below: only a clean leave meets it.
    first, second = replicas(), replicas()
    for server in (first, second):
        server.env["CLARION_REPLICA_TIMEOUT_S"] = "120"
    first.start(wait_ready=False)
    first_id = wait_role(first, "active")
    session_id, pending_id = first.live_question()
    second.start(wait_ready=False)
    second_id = wait_role(second, "active")
    assert session_owner(second, session_id) == first_id

    assert _signal(first, signal.SIGTERM) == 0
    assert CLEAN_AGENT_STOP in first.logs()
    wait_until(
        lambda: session_owner(second, session_id) == second_id,
        # Adoption by the heartbeat timeout could not come before 60 + 30 s of silence.
        timeout=60,
        what="the peer adopting the stopped replica's session",
    )
    assert second.bundle(pending_id)["state"] == "active_detached"
    response = second.respond(pending_id, answer("db", "sqlite"))
    assert response.status_code == 200, response.text
    assert response.json()["resumed"] is True
    second.wait_for_agent_text(session_id, RESUME_MARK)
