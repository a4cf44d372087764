"""A phone and a laptop as people use them: on a phone the session screen keeps the top bar
(Inbox link, connection status), answering does not put the caret in the message box (which
would open the keyboard), and no box talks about Shift+Enter; on a laptop the board's columns
keep a readable width while a task is open."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP
from tests.browser.ui_steps import box_of, open_board, open_pending_task, start_session
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser

_REACHABLE = """(id) => {
  const el = document.querySelector(`[data-testid="${id}"]`);
  const r = el.getBoundingClientRect();
  if (!r.width || !r.height || r.top < 0 || r.bottom > innerHeight) return false;
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return !!hit && (el === hit || el.contains(hit));
}"""


def test_on_a_phone_the_session_screen_keeps_the_top_bar_and_answering_leaves_the_keyboard_shut(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page(phone=True)
    assert page.evaluate("matchMedia('(pointer: coarse)').matches"), "a touch screen"
    task_id = shared_server.create_task("Answer from my phone")
    start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)
    open_pending_task(page, task_id, tap=True)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")

    for top_bar in ("inbox-link", "connection-status"):
        assert page.evaluate(_REACHABLE, top_bar), f"{top_bar} is hidden on the session screen"
    prompt = page.get_by_test_id("prompt-input")
    assert "Shift+Enter" not in (prompt.get_attribute("placeholder") or "")
    expect(overlay).not_to_contain_text("Shift+Enter")

    overlay.get_by_test_id("option-db-postgres").tap()
    overlay.get_by_test_id("submit-answer").tap()
    expect(overlay).to_be_hidden()
    expect(page.get_by_test_id("clarification-notice")).to_contain_text("Answer sent")
    expect(prompt).not_to_be_focused()
    page.get_by_test_id("inbox-link").tap()
    expect(page.get_by_test_id("inbox-view")).to_be_visible()


def test_with_a_task_open_the_board_columns_keep_a_readable_width(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page(viewport=LAPTOP)
    task_id = shared_server.create_task("Keep my columns wide")
    open_board(page, shared_server)
    page.get_by_test_id(f"task-card-{task_id}").click()
    expect(page.get_by_test_id("task-view")).to_be_visible()

    for step in ("backlog", "in_progress", "review", "done"):
        assert box_of(page, f"column-{step}")["width"] >= 220, f"{step} is squeezed"
