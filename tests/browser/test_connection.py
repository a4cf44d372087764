"""Offline and conflicts as a person meets them: a clear banner with a retry button, errors in
words, a fast reconnect that clears the error line; a second tab told that its question was
answered elsewhere."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, Route, expect

from tests.browser.ui_steps import Outage, open_board, open_pending_task, start_session
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser


def test_offline_shows_a_banner_human_errors_a_retry_and_clears_when_live(
    shared_server: ServerProcess, page: Page
) -> None:
    # The page's clock stands still from here: no timer reconnects, so only the button can.
    # (Installed, the clock still runs; a reconnect timer then raced the button under load.)
    page.clock.install()
    outage = Outage(page)
    open_board(page, shared_server)
    page.clock.pause_at(page.evaluate("Date.now()") / 1000 + 1)
    outage.begin()

    banner = page.get_by_test_id("connection-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Offline")
    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "closed")
    page.get_by_test_id("new-task-title").fill("Made while offline")
    # force: the stand-still clock also holds the animation frames Playwright's stability
    # check waits for.
    page.get_by_test_id("new-task-submit").click(force=True)
    status = page.get_by_test_id("board-status")
    expect(status).to_contain_text("Cannot reach the Clarion server")
    expect(status).not_to_contain_text("TypeError")
    expect(status).not_to_contain_text("Failed to fetch")

    outage.end()
    page.get_by_test_id("connection-retry").click(force=True)

    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    expect(banner).to_be_hidden()
    expect(status).to_be_empty()


def test_a_board_read_that_started_before_a_failed_create_leaves_its_error_shown(
    shared_server: ServerProcess, page: Page
) -> None:
    held: list[Route] = []
    page.route(re.compile(r"/api/v1/workflow/snapshot$"), lambda route: held.append(route))
    page.route(
        re.compile(r"/api/v1/tasks$"),
        lambda route: (
            route.abort("internetdisconnected")
            if route.request.method == "POST"
            else route.continue_()
        ),
    )
    with page.expect_request(re.compile(r"/api/v1/workflow/snapshot$")):
        page.goto(f"{shared_server.url}/")
    # The board's read is on its way (held here); meanwhile the person's create fails.
    page.get_by_test_id("new-task-title").fill("Made while the read was on its way")
    page.get_by_test_id("new-task-submit").click()
    status = page.get_by_test_id("board-status")
    expect(status).to_contain_text("Could not create the task: Cannot reach the Clarion server")
    assert held, "the board's read was not held"

    # The read that started earlier now succeeds: the create's error still stands.
    for route in held:
        with page.expect_response(re.compile(r"/api/v1/workflow/snapshot$")):
            route.continue_()
    expect(page.get_by_test_id("column-backlog")).to_be_visible()
    expect(status).to_contain_text("Could not create the task: Cannot reach the Clarion server")


def test_after_a_long_outage_it_reconnects_by_itself_within_a_few_seconds(
    shared_server: ServerProcess, page: Page
) -> None:
    # The page's timers run on Playwright's clock: a minute of outage takes no real time.
    page.clock.install()
    outage = Outage(page)
    open_board(page, shared_server)
    status = page.get_by_test_id("connection-status")
    outage.begin()
    expect(status).to_have_attribute("data-status", "closed")
    for _ in range(60):  # a minute down: every reconnect attempt meanwhile fails
        page.clock.run_for(1_000)
    outage.end()

    # Back up: the next attempt comes within the backoff cap (4 s), not 15 s or more later.
    for _ in range(9):
        page.clock.run_for(500)
    expect(status).to_have_attribute("data-status", "open", timeout=3_000)
    expect(page.get_by_test_id("connection-banner")).to_be_hidden()


def test_second_tab_says_its_question_was_answered_elsewhere(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    task_id = shared_server.create_task("Answered in the other tab")
    start_session(shared_server, task_id, "/scenario ask")
    first, second = new_page(), new_page()
    for page in (first, second):
        open_board(page, shared_server)
        open_pending_task(page, task_id)
        expect(page.get_by_test_id("clarification-overlay")).to_have_attribute(
            "data-state", "active_live"
        )

    first.get_by_test_id("option-db-postgres").click()
    first.get_by_test_id("submit-answer").click()

    expect(second.get_by_test_id("clarification-overlay")).to_be_hidden()
    notice = second.get_by_test_id("clarification-notice")
    expect(notice).to_contain_text("answered in another tab or client")
    expect(second.get_by_test_id("winning-answer")).to_have_text("Database: PostgreSQL")
