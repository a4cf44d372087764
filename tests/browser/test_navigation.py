"""Pending-owner navigation from the board and the phone layout, in a real browser against a
real server: the question icon leads to the session that owns the question, and a phone user
answers in the overlay by tapping."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ON_A_SECOND_WORKER
from tests.browser.ui_steps import (
    box_of,
    open_board,
    open_pending_task,
    screenshot,
    start_session,
)
from tests.e2e.harness import ServerProcess

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]


def test_question_icon_leads_to_the_secondary_session_that_owns_the_question(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Migrate the billing service")
    primary_id = start_session(shared_server, task_id, "/scenario echo ready", primary=True)
    secondary_id = start_session(shared_server, task_id, "/scenario ask", primary=False)
    pending_id = shared_server.wait_for_bundle(secondary_id)
    shared_server.wait_for_state(pending_id, "active_live")
    sessions = {
        s["id"]: s for s in shared_server.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"]
    }
    assert sessions[primary_id]["is_primary"] is True
    assert sessions[secondary_id]["is_primary"] is False
    moved = {
        "in_progress": shared_server.create_task("Write the export job"),
        "done": shared_server.create_task("Set up the staging database"),
    }
    for step, other_id in moved.items():
        shared_server.ok("POST", f"/tasks/{other_id}/move", json={"step": step})
    # The person last looked at the primary session: the question must still win.
    page.goto(f"{shared_server.url}/")
    page.evaluate(
        "([task, session]) => localStorage.setItem(`clarion.session.${task}`, session)",
        [task_id, primary_id],
    )
    open_board(page, shared_server)
    card = page.get_by_test_id(f"task-card-{task_id}")
    expect(card.get_by_test_id("pending-icon")).to_be_visible()
    expect(card.get_by_test_id("task-title")).to_have_text("Migrate the billing service")
    for step, other_id in moved.items():
        other = page.get_by_test_id(f"column-{step}").get_by_test_id(f"task-card-{other_id}")
        expect(other).to_have_attribute("data-step", step)
        expect(other.get_by_test_id("pending-icon")).to_have_count(0)
    expect(
        page.get_by_test_id("column-backlog").get_by_test_id(f"task-card-{task_id}")
    ).to_be_visible()
    screenshot(page, "board")

    open_pending_task(page, task_id)

    expect(page).to_have_url(re.compile(rf"#/tasks/{task_id}/sessions/{secondary_id}$"))
    expect(page.get_by_test_id("session-view")).to_have_attribute("data-session-id", secondary_id)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-pending-id", pending_id)
    expect(card).to_have_class(re.compile(r"\bselected\b"))


def test_phone_viewport_opens_the_task_from_the_list_and_answers_by_tapping(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page(phone=True)
    task_id = shared_server.create_task("Answer from the phone")
    session_id = start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)
    card = page.get_by_test_id(f"task-card-{task_id}")
    expect(card).to_be_visible()
    board_box = box_of(page, "board")
    card_box = box_of(page, f"task-card-{task_id}")
    assert board_box["width"] <= 390 and card_box["width"] > 300  # one column list

    open_pending_task(page, task_id, tap=True)

    detail = page.get_by_test_id("detail")
    expect(page.get_by_test_id("session-view")).to_have_attribute("data-session-id", session_id)
    sheet = box_of(page, "detail")
    # The sheet fills the screen under the one-line top bar (Inbox link and status in reach).
    topbar = box_of(page, "inbox-link")
    assert sheet["x"] == 0 and sheet["width"] == 390
    assert topbar["y"] + topbar["height"] <= sheet["y"] <= 64
    assert sheet["y"] + sheet["height"] == 844
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")
    # A phone keyboard has only Enter to start a new line in the custom answer.
    custom = overlay.get_by_test_id("custom-text-db")
    custom.tap()
    custom.press_sequentially("first line")
    custom.press("Enter")
    custom.press_sequentially("second line")
    expect(custom).to_have_value("first line\nsecond line")
    custom.fill("")
    option = overlay.get_by_test_id("option-db-sqlite")
    option.tap()
    expect(option).to_have_attribute("aria-pressed", "true")
    for target in ("option-db-sqlite", "submit-answer", "dismiss-question"):
        box = box_of(page, "clarification-overlay", target)
        assert box["height"] >= 52, f"tap target too small: {target} {box}"
    expect(overlay.get_by_test_id("submit-answer")).to_be_in_viewport()
    screenshot(page, "phone")
    overlay.get_by_test_id("submit-answer").tap()

    expect(overlay).to_be_hidden()
    expect(page.get_by_test_id("transcript")).to_contain_text("You answered: db: sqlite")
    page.get_by_test_id("session-back").tap()
    expect(page.get_by_test_id("task-view")).to_be_visible()
    page.get_by_test_id("task-back").tap()
    expect(detail).to_be_hidden()
    expect(card).to_be_in_viewport()
