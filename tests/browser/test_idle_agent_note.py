"""The session view says when Clarion stopped an idle agent, and the note goes once the next
message starts it again. A server of its own, whose built-in agent idles out after 3 s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.ui_steps import open_board, start_session
from tests.conftest import fresh_database_url
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser

NOTE = "agent stopped while idle; it starts again on the next message"


@pytest.fixture
def idle_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with fresh_database_url("sqlite", tmp_path) as url:
        workdir = tmp_path / "server"
        workdir.mkdir()
        config = workdir / "idle.toml"
        config.write_text('[agents.builtin]\nagent_idle_stop_after = "3s"\n')
        server = ServerProcess(
            database_url=url,
            workdir=workdir,
            env={"CLARION_NO_SAMPLE": "1"},
            args=["--config", str(config)],
        )
        try:
            server.start()
            yield server
        finally:
            server.stop()


def test_the_session_view_says_the_agent_stopped_while_idle_until_the_next_message(
    idle_server: ServerProcess, page: Page
) -> None:
    task_id = idle_server.create_task("Idle for a while")
    session_id = start_session(idle_server, task_id, "/scenario echo hello")
    idle_server.wait_for_agent_text(session_id, "echo: hello")
    open_board(page, idle_server)
    page.goto(f"{idle_server.url}/#/tasks/{task_id}/sessions/{session_id}")

    note = page.get_by_test_id("agent-process-note")
    expect(note).to_have_text(NOTE, timeout=60_000)

    idle_server.ok(
        "POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "/scenario echo again"}
    )
    idle_server.wait_for_agent_text(session_id, "echo: again")
    expect(note).to_have_count(0)
