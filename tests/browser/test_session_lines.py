"""Lines of the session view that read as what happened: after a skip the agent's reply says
the question was skipped (the agent's JSON stays as it is, only its reading changes), and the
outcome of an allowed permission goes once the agent asks its next question."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.ui_steps import start_session
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser


def test_after_a_skip_the_agent_line_says_the_question_was_skipped(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Skipped question")
    session_id = start_session(shared_server, task_id, "/scenario ask")
    page.goto(f"{shared_server.url}/#/tasks/{task_id}/sessions/{session_id}")
    overlay = page.get_by_test_id("clarification-overlay")
    overlay.get_by_test_id("skip-question").click()
    overlay.get_by_test_id("skip-confirm-button").click()
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert '"rejected": true' in reply  # the agent's own text is unchanged
    transcript = page.get_by_test_id("transcript")
    expect(transcript).to_contain_text("You skipped the question")
    expect(transcript).not_to_contain_text("rejected: true")


def test_the_permission_outcome_goes_when_the_agent_asks_its_next_question(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Permission, then a question")
    session_id = start_session(shared_server, task_id, "/scenario permission-then-ask")
    page.goto(f"{shared_server.url}/#/tasks/{task_id}/sessions/{session_id}")
    panel = page.get_by_test_id("permission-panel")
    panel.get_by_test_id("permission-option-allow").click()
    expect(page.get_by_test_id("clarification-overlay")).to_be_visible()
    expect(page.get_by_test_id("clarification-notice")).to_be_hidden()
