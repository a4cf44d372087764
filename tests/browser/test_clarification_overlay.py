"""The clarification overlay in a real browser against a real server and the built-in agent:
answering, the stepper, Skip, a detached question after a reload, and a stale overlay (409)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect

from tests.browser.ui_steps import open_board, open_pending_task, screenshot, start_session
from tests.e2e.harness import ServerProcess, answer

pytestmark = pytest.mark.browser


def _session_route(task_id: str, session_id: str) -> re.Pattern[str]:
    return re.compile(rf"#/tasks/{task_id}/sessions/{session_id}$")


def test_clicking_an_option_answers_a_live_question_and_the_agent_replies(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Choose the service database")
    session_id = start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)

    open_pending_task(page, task_id)

    expect(page).to_have_url(_session_route(task_id, session_id))
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")
    expect(overlay.get_by_test_id("question-prompt")).to_have_text(
        "Which database should the service use?"
    )
    expect(overlay).not_to_contain_text("null")
    expect(overlay.get_by_test_id("option-db-sqlite").get_by_test_id("option-label")).to_have_text(
        "SQLite"
    )
    expect(
        overlay.get_by_test_id("option-db-sqlite").get_by_test_id("option-description")
    ).to_have_text("Embedded, single file")
    submit = overlay.get_by_test_id("submit-answer")
    expect(submit).to_be_disabled()
    option = overlay.get_by_test_id("option-db-postgres")
    option.click()
    expect(option).to_have_attribute("aria-pressed", "true")
    screenshot(page, "overlay")
    submit.click()

    expect(overlay).to_be_hidden()
    transcript = page.get_by_test_id("transcript")
    expect(transcript).to_contain_text("You answered: db: postgres")
    expect(transcript.get_by_test_id("question-status")).to_have_text("answered")
    expect(page.get_by_test_id("session-state")).to_have_attribute("data-state", "IDLE")
    expect(page.get_by_test_id("session-state")).to_have_text("Idle")
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert json.loads(reply.removeprefix("You answered: "))["db"]["selected_options"] == [
        "postgres"
    ]


def test_three_question_bundle_is_answered_through_the_stepper_with_one_custom_text(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Plan the new service")
    session_id = start_session(shared_server, task_id, "/scenario ask-multi")
    open_board(page, shared_server)
    open_pending_task(page, task_id)

    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay.get_by_test_id("clarification-context")).to_have_count(1)
    expect(overlay.get_by_test_id("clarification-context")).not_to_be_empty()
    for n in (1, 2, 3):
        expect(overlay.get_by_test_id(f"step-{n}")).to_be_visible()
    question = overlay.get_by_test_id("clarification-question")
    expect(question).to_have_attribute("data-question-id", "db")
    overlay.get_by_test_id("option-db-sqlite").click()

    # Picking an option moved the stepper on to the second question.
    expect(question).to_have_attribute("data-question-id", "language")
    custom = overlay.get_by_test_id("custom-text-language")
    custom.click()
    custom.press_sequentially("Zig, honestly")
    custom.press("Shift+Enter")
    custom.press_sequentially("or Rust")
    expect(custom).to_have_value("Zig, honestly\nor Rust")
    expect(overlay.get_by_test_id("submit-answer")).to_be_disabled()
    custom.press("Enter")  # answered, so Enter moves on

    expect(question).to_have_attribute("data-question-id", "deploy")
    overlay.get_by_test_id("option-deploy-docker").click()
    expect(overlay.get_by_test_id("submit-answer")).to_be_enabled()
    screenshot(page, "overlay-multi")
    overlay.get_by_test_id("submit-answer").click()

    expect(overlay).to_be_hidden()
    expect(page.get_by_test_id("transcript")).to_contain_text("You answered:")
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert json.loads(reply.removeprefix("You answered: ")) == {
        "db": {"selected_options": ["sqlite"], "custom_text": ""},
        "language": {"selected_options": [], "custom_text": "Zig, honestly\nor Rust"},
        "deploy": {"selected_options": ["docker"], "custom_text": ""},
    }


def test_skip_rejects_the_bundle_and_the_agent_receives_the_rejection(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Skip this one")
    session_id = start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)
    open_pending_task(page, task_id)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")
    pending_id = overlay.get_attribute("data-pending-id")
    assert pending_id

    overlay.get_by_test_id("skip-question").click()
    overlay.get_by_test_id("skip-confirm-button").click()

    expect(overlay).to_be_hidden()
    expect(page.get_by_test_id("clarification-notice")).to_contain_text("skipped")
    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("question-status")).to_have_text("skipped")
    expect(transcript.get_by_test_id("question-status")).to_have_count(1)
    expect(transcript.locator("[data-status=rejected]")).to_have_count(1)
    # The agent's JSON (below) reads in words.
    expect(transcript).to_contain_text("You skipped the question (User skipped).")
    expect(transcript).not_to_contain_text("rejected: true")
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert json.loads(reply.removeprefix("You answered: ")) == {
        "rejected": True,
        "reject_reason": "User skipped",
    }
    assert shared_server.bundle(pending_id)["state"] == "terminal"


def test_detached_question_is_answered_after_a_reload_and_the_agent_resumes(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Answer me later")
    session_id = start_session(shared_server, task_id, "/scenario ask-timeout t=1")
    pending_id = shared_server.wait_for_bundle(session_id)
    shared_server.wait_for_agent_text(session_id, "No answer yet; ending turn.")
    shared_server.wait_for_state(pending_id, "active_detached")
    open_board(page, shared_server)
    open_pending_task(page, task_id)
    expect(page).to_have_url(_session_route(task_id, session_id))

    page.reload()

    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_detached")
    expect(overlay).to_have_attribute("data-pending-id", pending_id)
    expect(overlay.get_by_test_id("detached-notice")).to_contain_text("resume")
    overlay.get_by_test_id("option-db-mongodb").click()
    overlay.get_by_test_id("submit-answer").click()

    expect(overlay).to_be_hidden()
    transcript = page.get_by_test_id("transcript")
    expect(transcript).to_contain_text("You previously asked the user:")
    resumed = shared_server.wait_for_agent_text(session_id, "You previously asked the user:")
    assert "MongoDB" in resumed
    assert shared_server.bundle(pending_id)["state"] == "terminal"


def test_stale_overlay_gets_409_closes_and_shows_the_winning_answer(
    shared_server: ServerProcess, page: Page
) -> None:
    # The page's live feed is cut off (a silent mock socket), so the answer given elsewhere
    # cannot close the overlay before the page submits its own.
    def silent(ws: WebSocketRoute) -> None:
        ws.on_message(lambda _message: None)

    page.route_web_socket(re.compile(r"/api/v1/ws"), silent)
    task_id = shared_server.create_task("Two people answer")
    session_id = start_session(shared_server, task_id, "/scenario ask")
    pending_id = shared_server.wait_for_bundle(session_id)
    shared_server.wait_for_state(pending_id, "active_live")
    page.goto(f"{shared_server.url}/")
    open_pending_task(page, task_id)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-pending-id", pending_id)
    overlay.get_by_test_id("option-db-postgres").click()

    won = shared_server.respond(pending_id, answer("db", "sqlite"))
    assert won.status_code == 200, won.text
    with page.expect_response(re.compile(r"/respond$")) as response_info:
        overlay.get_by_test_id("submit-answer").click()

    assert response_info.value.status == 409
    expect(overlay).to_be_hidden()
    expect(page.get_by_test_id("clarification-notice")).to_contain_text("already answered")
    expect(page.get_by_test_id("winning-answer")).to_have_text("Database: SQLite")
    # The cut feed never said the question was answered: the 409 made the page read it again.
    question = page.get_by_test_id("transcript").get_by_test_id("question-status")
    expect(question).to_have_text("answered")
    expect(page.get_by_test_id("your-answer-text")).to_have_text("SQLite")
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert "sqlite" in reply and "postgres" not in reply
