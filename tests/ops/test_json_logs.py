"""`--log-format json` / `CLARION_LOG_FORMAT=json`: one JSON object per log line, with `level`,
`logger`, `message` and the ids as fields."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from clarion.cli.logs import JsonFormatter, KeyValueFormatter
from clarion.runtime import log_fields
from tests.e2e.harness import ServerProcess, answer


def _record(msg: str, extra: dict[str, Any], exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            exc_info = sys.exc_info()
    record = logging.LogRecord("clarion.x", logging.WARNING, __file__, 1, msg, (), exc_info)
    record.__dict__.update(extra)
    return record


def test_a_json_line_has_level_logger_message_and_each_id_as_a_field() -> None:
    ids = {"task_id": "t1", "session_id": "s1", "turn_id": "u1", "pending_id": "p1"}
    line = JsonFormatter().format(_record("answer accepted", {**ids, "replica": "r1"}))
    body = json.loads(line)
    assert "\n" not in line
    assert body["level"] == "WARNING" and body["logger"] == "clarion.x"
    assert body["message"] == "answer accepted"
    assert {k: body[k] for k in ids} == ids and body["replica"] == "r1"
    assert body["time"].endswith("+00:00")


def test_a_json_line_keeps_a_traceback_on_its_one_line_and_writes_odd_values_as_text() -> None:
    line = JsonFormatter().format(_record("failed\nbadly", {"path": Path("/x")}, exc=True))
    assert len(line.splitlines()) == 1
    body = json.loads(line)
    assert body["message"] == "failed\nbadly"
    assert body["path"] == "/x"
    assert "RuntimeError: boom" in body["exception"]


def test_the_process_replica_is_on_every_json_line_and_a_call_sites_own_value_wins() -> None:
    log_fields.stamp(replica="me")
    try:
        assert json.loads(JsonFormatter().format(_record("m", {})))["replica"] == "me"
        peer = JsonFormatter().format(_record("m", {"replica": "peer"}))
        assert json.loads(peer)["replica"] == "peer"
        assert "me" not in KeyValueFormatter().format(_record("m", {}))
    finally:
        log_fields.unstamp("replica")
    assert "replica" not in json.loads(JsonFormatter().format(_record("m", {})))


def _json_lines(server: ServerProcess) -> list[dict[str, Any]]:
    lines = [line for line in server.logs().splitlines() if line.startswith("{")]
    return [json.loads(line) for line in lines]


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_server_logging_json_writes_only_json_lines_with_the_answer_ids(
    tmp_path: Path, how: str
) -> None:
    server = ServerProcess(database_url=f"sqlite:///{tmp_path / 'c.db'}", workdir=tmp_path)
    if how == "flag":
        server.args += ["--log-format", "json"]
    else:
        server.env["CLARION_LOG_FORMAT"] = "json"
    server.start()
    try:
        task_id = server.create_task()
        session_id = server.start_session(task_id, "/scenario ask")
        pending_id = server.wait_for_bundle(session_id)
        assert server.respond(pending_id, answer("db", "sqlite")).status_code == 200
        server.wait_for_agent_text(session_id, "You answered:")
    finally:
        server.stop()
    # Every line the logging system wrote is one object (the listening banner is stdout's).
    logged = [line for line in server.logs().splitlines() if not line.startswith("Clarion is")]
    assert logged and all(line.startswith("{") for line in logged), logged
    records = _json_lines(server)
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
    about = [r for r in records if r.get("pending_id") == pending_id]
    assert about, records
    assert any(r.get("session_id") == session_id for r in records)


def test_an_unknown_log_format_is_a_usage_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clarion.cli.app import app

    result = CliRunner().invoke(
        app, ["serve", "--database", f"sqlite:///{tmp_path / 'c.db'}", "--log-format", "xml"]
    )
    assert result.exit_code == 2
    assert "unknown log format 'xml'" in result.output
