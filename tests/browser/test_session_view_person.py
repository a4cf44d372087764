"""The session view as a person reads it: their own answer in the transcript, sessions of one
task told apart, states in words, actions only when they can act, Finish confirmed, new agent
messages announced, and starting a session never pulls the page away from where one went."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect

from tests.browser.ui_steps import open_board, open_pending_task, start_session
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser


def test_own_answer_is_shown_in_the_transcript_as_text_with_its_time(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Show what I said")
    start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)
    open_pending_task(page, task_id)
    overlay = page.get_by_test_id("clarification-overlay")
    overlay.get_by_test_id("custom-text-db").fill("Postgres 16, managed")
    overlay.get_by_test_id("submit-answer").click()

    mine = page.get_by_test_id("transcript").get_by_test_id("your-answer")
    expect(mine).to_contain_text("You answered: Postgres 16, managed")
    when = mine.locator("time")
    expect(when).to_have_text(re.compile(r"\d{1,2}:\d{2}"))
    assert re.match(r"\d{4}-\d\d-\d\dT", when.get_attribute("datetime") or "")
    expect(mine).not_to_contain_text("{")


def test_sessions_read_in_words_and_actions_follow_the_state(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Two sessions, one agent")
    first = start_session(shared_server, task_id, "/scenario echo first")
    second = start_session(shared_server, task_id, "/scenario echo second", primary=False)
    shared_server.wait_for_agent_text(first, "echo: first")
    shared_server.wait_for_agent_text(second, "echo: second")
    open_board(page, shared_server)
    page.goto(f"{shared_server.url}/#/tasks/{task_id}")

    one = page.get_by_test_id(f"session-item-{first}")
    two = page.get_by_test_id(f"session-item-{second}")
    expect(one.get_by_test_id("session-name")).to_have_text(re.compile(r"^Session 1 · started \d"))
    expect(two.get_by_test_id("session-name")).to_have_text(re.compile(r"^Session 2 · started \d"))
    expect(two.get_by_test_id("session-item-state")).to_have_text("Idle")
    expect(page.get_by_test_id("session-list")).not_to_contain_text("IDLE")

    two.click()
    state = page.get_by_test_id("session-state")
    expect(state).to_have_text("Idle")
    expect(page.get_by_test_id("session-view").get_by_test_id("session-name")).to_contain_text(
        "Session 2"
    )
    expect(page.get_by_test_id("session-cancel")).to_be_disabled()
    page.get_by_test_id("prompt-input").fill("/scenario echo hello there")
    page.get_by_test_id("prompt-send").click()
    expect(page.get_by_test_id("agent-announcer")).to_have_text("Agent: echo: hello there")
    # The reply is announced as it arrives; the turn ends (and the session idles) after it.
    expect(state).to_have_text("Idle")

    page.get_by_test_id("session-finish").click()
    dialog = page.get_by_test_id("confirm-dialog")
    expect(dialog).to_contain_text("Finish this session?")
    page.get_by_test_id("confirm-no").click()
    expect(dialog).to_have_count(0)
    expect(page.get_by_test_id("session-finish")).to_be_focused()
    assert shared_server.ok("GET", f"/task-sessions/{second}")["session"]["state"] == "IDLE"
    page.get_by_test_id("session-finish").click()
    page.get_by_test_id("confirm-yes").click()

    expect(state).to_have_text("Finished")
    expect(page.get_by_test_id("prompt-input")).to_be_disabled()
    expect(page.get_by_test_id("prompt-send")).to_be_disabled()
    expect(page.get_by_test_id("session-finish")).to_be_disabled()


@pytest.fixture
def held_starts(page: Page) -> list[Route]:
    """Holds every POST that starts a session until the test lets it go."""
    held: list[Route] = []

    def hold(route: Route) -> None:
        if route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route(re.compile(r"/api/v1/tasks/[^/]+/task-sessions$"), hold)
    return held


def test_starting_a_session_then_going_back_to_the_board_stays_on_the_board(
    shared_server: ServerProcess, page: Page, held_starts: list[Route]
) -> None:
    task_id = shared_server.create_task("Start and walk away")
    open_board(page, shared_server)
    page.get_by_test_id(f"task-card-{task_id}").click()
    page.get_by_test_id("new-session-prompt").fill("/scenario echo later")
    with page.expect_request(lambda r: r.method == "POST" and "task-sessions" in r.url):
        page.get_by_test_id("new-session-submit").click()
    page.get_by_test_id("task-back").click()
    expect(page).to_have_url(re.compile(r"#/$"))
    for _ in range(200):  # the route handler runs on Playwright's next turn
        if held_starts:
            break
        page.wait_for_timeout(25)
    assert len(held_starts) == 1

    held_starts[0].continue_()

    notice = page.get_by_test_id("board-notice")
    expect(notice).to_contain_text("Started a session on “Start and walk away”")
    expect(page).to_have_url(re.compile(r"#/$"))
    expect(page.get_by_test_id("detail")).to_be_hidden()
