"""An answer a restart left possibly undelivered, seen and resent from the web UI: a real
server killed at the attempt marker, restarted, and the person's explicit resend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ON_A_SECOND_WORKER
from tests.browser.ui_steps import open_board, screenshot, start_session
from tests.conftest import fresh_database_url
from tests.e2e.harness import ServerProcess, answer

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]
RESUME_MARK = "You previously asked the user:"


@pytest.fixture
def crashed_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with fresh_database_url("sqlite", tmp_path) as url:
        workdir = tmp_path / "server"
        workdir.mkdir()
        server = ServerProcess(database_url=url, workdir=workdir)
        try:
            yield server
        finally:
            server.kill()


def test_ambiguous_answer_is_shown_and_sent_again_once(
    crashed_server: ServerProcess, page: Page
) -> None:
    server = crashed_server
    server.start()
    task_id = server.create_task("Pick the database")
    session_id = start_session(server, task_id, "/scenario ask-timeout t=1")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_agent_text(session_id, "No answer yet; ending turn.")
    server.wait_for_state(pending_id, "active_detached")
    server.kill()
    server.start(failpoints="resume.after_attempt=crash")
    with pytest.raises(httpx.HTTPError):
        server.respond(pending_id, answer("db", "sqlite"))
    assert server.wait_exit() == 137
    server.start()
    open_board(page, server)

    page.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")

    warning = page.get_by_test_id("delivery-ambiguous")
    expect(warning).to_contain_text("may not have received it")
    screenshot(page, "ambiguous-delivery")
    warning.get_by_test_id("resend-answer").click()
    expect(page.get_by_test_id("clarification-notice")).to_contain_text("sent to the agent again")
    expect(warning).to_have_count(0)
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.bundle(pending_id)["delivery"] == "delivered"
    assert sum(RESUME_MARK in t for t in server.agent_texts(session_id)) == 1
