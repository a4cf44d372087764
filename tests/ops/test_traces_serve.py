"""`clarion serve` with `[telemetry] exporter = "console"` prints its spans on standard output,
one JSON object per line: a real server, a real agent, a live answer whose request continues
its caller's trace (`traceparent`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ServerProcess, answer, wait_until

pytestmark = pytest.mark.e2e

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def _spans(server: ServerProcess) -> list[dict[str, Any]]:
    """The span lines among the server's output (its log lines are text)."""
    spans = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "context" in record and "name" in record:
                spans.append(record)
    return spans


def test_a_console_exporter_prints_a_live_answers_spans(tmp_path: Path) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text('[telemetry]\nexporter = "console"\nservice_name = "clarion-e2e"\n')
    server = ServerProcess(database_url=f"sqlite:///{tmp_path / 'c.db'}", workdir=tmp_path)
    server.args += ["--config", str(config)]
    server.start()
    try:
        session_id, pending_id = server.live_question()
        # The caller's trace goes on: the answer's spans join it.
        answered = server.request(
            "POST",
            f"/clarification/{pending_id}/respond",
            json=answer("db", "sqlite"),
            headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
        )
        assert answered.status_code == 200

        def printed() -> list[dict[str, Any]] | None:
            spans = _spans(server)
            names = {s["name"] for s in spans}
            wanted = {"agent.start", "ask", "respond", "claim", "deliver", "confirm", "publish"}
            return spans if wanted <= names else None

        spans = wait_until(printed, timeout=60, what="the answer's spans printed")
    finally:
        server.stop()

    by_name = {s["name"]: s for s in spans}
    respond = by_name["respond"]
    assert respond["attributes"]["clarion.pending_id"] == pending_id
    assert respond["attributes"]["clarion.session_id"] == session_id
    assert respond["attributes"]["clarion.outcome"] == "delivered"
    assert respond["resource"]["attributes"]["service.name"] == "clarion-e2e"
    trace = respond["context"]["trace_id"]
    assert trace == f"0x{CALLER_TRACE}"
    assert respond["parent_id"] == f"0x{CALLER_SPAN}"
    for step in ("claim", "deliver", "publish"):
        assert by_name[step]["parent_id"] == respond["context"]["span_id"], step
        assert by_name[step]["context"]["trace_id"] == trace
    assert by_name["confirm"]["parent_id"] == by_name["deliver"]["context"]["span_id"]
    assert by_name["ask"]["attributes"]["clarion.outcome"] == "answered"
    assert by_name["agent.start"]["attributes"]["clarion.session_id"] == session_id
