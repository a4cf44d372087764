"""The inbox on a laptop (1366x850) is readable: it takes the page's width (the board's
columns would be empty space beside it), and each item shows its task and its question in
full on two lines, Markdown rendered, so two tasks with similar titles are told apart and a
question whose agent stopped waiting still shows what it asks."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER
from tests.browser.ui_steps import box_of, screenshot, start_session
from tests.e2e.harness import ServerProcess

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

SIMILAR = "Reconnect checkout to the payment provider after the outage of the"


def test_the_desktop_inbox_is_page_wide_and_shows_task_and_question_in_full(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    server = shared_server
    first = server.create_task(f"{SIMILAR} EU region")
    second = server.create_task(f"{SIMILAR} US region")
    live = server.wait_for_bundle(start_session(server, first, "/scenario ask-markdown"))
    detached_session = start_session(server, second, "/scenario ask-timeout t=1")
    detached = server.wait_for_bundle(detached_session)
    server.wait_for_agent_text(detached_session, "No answer yet; ending turn.")
    server.wait_for_state(detached, "active_detached")

    page = new_page(viewport=LAPTOP)
    page.goto(f"{server.url}/#/inbox")
    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    view = box_of(page, "inbox-view")
    assert view["width"] >= 1000, f"the inbox is {view['width']} px wide on a 1366 px screen"
    expect(page.get_by_test_id("column-backlog")).to_be_hidden()

    markdown_item = page.get_by_test_id(f"inbox-item-{live}")
    summary = markdown_item.get_by_test_id("inbox-summary")
    expect(summary).to_have_text("Which cache should the service use? See the notes.")
    expect(summary.locator("strong")).to_have_text("cache")
    expect(markdown_item.get_by_test_id("inbox-task")).to_have_text(f"{SIMILAR} EU region")

    paused = page.get_by_test_id(f"inbox-item-{detached}")
    expect(paused.get_by_test_id("inbox-task")).to_have_text(f"{SIMILAR} US region")
    expect(paused.get_by_test_id("inbox-summary")).to_have_text(
        "Which database should the service use?"
    )
    for item in (live, detached):
        task = box_of(page, f"inbox-item-{item}", "inbox-task")
        question = box_of(page, f"inbox-item-{item}", "inbox-summary")
        assert question["y"] >= task["y"] + task["height"] - 1, "the question is on its own line"
        cut = page.evaluate(
            """(id) => [...document.querySelectorAll(
                 `[data-testid="inbox-item-${id}"] [data-testid^="inbox-"]`)]
               .filter((el) => el.scrollWidth > el.clientWidth + 1)
               .map((el) => el.dataset.testid)""",
            item,
        )
        assert cut == [], f"cut off: {cut}"
    screenshot(page, "inbox-desktop")
