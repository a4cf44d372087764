"""Permission requests and agent failures in a real browser against a real server and the
built-in agent: deciding by click and by key, the task marker, and errors in the transcript
and the session header."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.ui_steps import box_of, open_board, screenshot, start_session
from tests.e2e.harness import ServerProcess
from tests.e2e.permission_steps import permission, wait_for_permission

pytestmark = pytest.mark.browser


def _open_permission_task(page: Page, task_id: str) -> None:
    card = page.get_by_test_id(f"task-card-{task_id}")
    expect(card.get_by_test_id("pending-icon")).to_have_attribute("data-action", "permission")
    card.click()


def _open_session(page: Page, server: ServerProcess, task_id: str, session_id: str) -> None:
    page.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")
    expect(page.get_by_test_id("session-view")).to_be_visible()


def test_a_pending_permission_is_shown_like_a_question_and_allowed_by_a_click(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Update the README")
    session_id = start_session(shared_server, task_id, "/scenario permission")
    message_id = wait_for_permission(shared_server, session_id)["id"]
    open_board(page, shared_server)

    _open_permission_task(page, task_id)

    expect(page).to_have_url(re.compile(rf"#/tasks/{task_id}/sessions/{session_id}$"))
    panel = page.get_by_test_id("permission-panel")
    expect(panel.get_by_test_id("permission-title")).to_have_text("Edit README.md")
    expect(panel.get_by_test_id("permission-kind")).to_have_text("edit")
    expect(panel.get_by_test_id("permission-path")).to_have_text("README.md")
    expect(panel.get_by_test_id("permission-diff")).to_contain_text("+ # Project")
    expect(panel.get_by_test_id("permission-diff")).to_contain_text("+ Updated by the agent.")
    expect(panel).not_to_contain_text("\\n")
    expect(panel.get_by_test_id("permission-option-allow-always")).to_contain_text(
        "stops asking about edit calls"
    )
    expect(panel).not_to_contain_text("null")
    expect(page.get_by_test_id("session-view").locator(".sheet-header")).not_to_contain_text("null")
    for option in ("allow", "allow-always", "reject", "reject-always"):
        expect(panel.get_by_test_id(f"permission-option-{option}")).to_be_visible()
    screenshot(page, "permission")
    panel.get_by_test_id("permission-option-allow").click()

    expect(panel).to_be_hidden()
    transcript = page.get_by_test_id("transcript")
    expect(transcript).to_contain_text("Permission: allow")
    expect(transcript.get_by_test_id("permission-status")).to_have_text("approved")
    expect(page.get_by_test_id("clarification-notice")).to_contain_text("Allow (approved) by user")
    assert permission(shared_server, message_id)["decision"]["option_id"] == "allow"


def test_a_number_key_decides_and_a_phone_sees_the_options_as_buttons(
    shared_server: ServerProcess, new_page: object
) -> None:
    task_id = shared_server.create_task("Run the tests")
    session_id = start_session(shared_server, task_id, "/scenario permission kind=execute")
    wait_for_permission(shared_server, session_id)
    phone = new_page(phone=True)  # type: ignore[operator]
    _open_session(phone, shared_server, task_id, session_id)
    panel = phone.get_by_test_id("permission-panel")
    expect(panel.get_by_test_id("permission-kind")).to_have_text("execute")
    expect(panel.get_by_test_id("permission-command")).to_have_text("$ make test")
    box = box_of(phone, "permission-panel", "permission-option-reject")
    assert box["height"] >= 44  # a finger-sized target
    # Every option says what it does: no empty space under its name.
    expect(panel.get_by_test_id("permission-option-meaning")).to_have_count(4)
    expect(panel.get_by_test_id("permission-option-allow-always")).to_contain_text(
        "stops asking about execute calls"
    )
    screenshot(phone, "permission-phone")

    panel.focus()
    phone.keyboard.press("3")  # the third option: reject

    expect(panel).to_be_hidden()
    shared_server.wait_for_agent_text(session_id, "Permission: reject")
    expect(phone.get_by_test_id("transcript")).to_contain_text("Permission: reject")


def test_an_errored_prompt_is_shown_in_the_transcript_and_the_header(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Call an overloaded model")
    session_id = start_session(shared_server, task_id, "/scenario fail the model is overloaded")
    _open_session(page, shared_server, task_id, session_id)

    reason = page.get_by_test_id("transcript").get_by_test_id("error-reason")
    expect(reason).to_contain_text("the model is overloaded")
    expect(page.get_by_test_id("session-error")).to_contain_text("the model is overloaded")
    expect(page.get_by_test_id("session-state")).to_have_attribute("data-state", "IDLE")


def test_an_agent_that_exits_fails_the_session_visibly(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Run out of memory")
    session_id = start_session(shared_server, task_id, "/scenario exit code=7 out of memory")
    _open_session(page, shared_server, task_id, session_id)

    expect(page.get_by_test_id("session-state")).to_have_attribute("data-state", "FAILED")
    expect(page.get_by_test_id("transcript")).to_contain_text("Agent failed")
    expect(page.get_by_test_id("session-error")).to_contain_text("exited unexpectedly with code 7")
    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("error-reason")).to_contain_text("code 7")
    transcript.get_by_text("Agent output").click()
    expect(transcript.get_by_test_id("error-detail")).to_contain_text("out of memory")
    screenshot(page, "agent-failure")
