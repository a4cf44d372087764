"""`[retention]` in the config file: the server prunes what finished long ago in the
background, as `clarion db prune` would, and never a task with anything alive."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clarion.config import Settings
from tests.e2e.harness import ServerProcess, wait_until


def _settings(tmp_path: Path, toml: str) -> Settings:
    config = tmp_path / "clarion.toml"
    config.write_text(toml)
    return Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path)})


def test_retention_is_off_unless_configured_and_every_defaults_to_an_hour(tmp_path: Path) -> None:
    assert _settings(tmp_path, "").operations.retention_older_than_s == 0
    on = _settings(tmp_path, '[retention]\nolder_than = "90d"\n').operations
    assert (on.retention_older_than_s, on.retention_every_s) == (90 * 86400, 3600)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[retention]\nolder_than = "90 days"\n', "retention.older_than must be a positive"),
        ('[retention]\nolder_than = "9d"\nevery = "0"\n', "retention.every must be a positive"),
        ('[retention]\nolder = "9d"\n', "unknown key(s) older"),
        ('retention = "9d"\n', "[retention] must be a table"),
    ],
)
def test_a_bad_retention_table_is_refused_in_one_line(
    tmp_path: Path, toml: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _settings(tmp_path, toml)


@pytest.mark.e2e
def test_the_server_prunes_finished_sessions_in_the_background(tmp_path: Path) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text('[retention]\nolder_than = "1s"\nevery = "1s"\n')
    server = ServerProcess(database_url=f"sqlite:///{tmp_path / 'c.db'}", workdir=tmp_path)
    server.args += ["--config", str(config)]
    server.start()
    try:
        done = server.start_session(server.create_task("Done"), "hello")
        server.wait_for_agent_text(done, "Received: hello")
        server.ok("POST", f"/task-sessions/{done}/finish", json={"state": "completed"})
        # A task with a running session keeps even its finished sessions. The running one
        # starts first: started after the other finished, a slow start (a loaded machine)
        # left the task without a running session for longer than `older_than`.
        busy_task = server.create_task("Busy")
        running = server.start_session(busy_task, "hello")
        server.wait_for_agent_text(running, "Received: hello")
        finished = server.start_session(busy_task, "hello")
        server.wait_for_agent_text(finished, "Received: hello")
        server.ok("POST", f"/task-sessions/{finished}/finish", json={"state": "completed"})

        wait_until(
            lambda: server.request("GET", f"/task-sessions/{done}").status_code == 404,
            timeout=60,
            what="the finished session pruned",
        )
        assert "retention pass pruned" in server.logs()
        assert server.request("GET", f"/task-sessions/{finished}").status_code == 200
        assert server.request("GET", f"/task-sessions/{running}").status_code == 200
    finally:
        server.stop()
