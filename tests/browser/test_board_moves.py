"""Moving tasks on the board: by dragging a card to another column, by the keyboard-reachable
move buttons, and a move the workflow guard refuses says why. Columns stand side by side and
fill the board's height (drop targets)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.ui_steps import (
    box_of,
    drag_card,
    open_board,
    open_pending_task,
    start_session,
)
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser


def _card_in(page: Page, step: str, task_id: str) -> Locator:
    """The task's card in the column of `step`."""
    return page.get_by_test_id(f"column-{step}").get_by_test_id(f"task-card-{task_id}")


def _step(server: ServerProcess, task_id: str) -> str:
    return str(server.ok("GET", f"/tasks/{task_id}")["task"]["workflow_step"])


def test_dragging_a_card_to_another_column_moves_the_task(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Drag me to review")
    open_board(page, shared_server)
    expect(_card_in(page, "backlog", task_id)).to_be_visible()

    drag_card(page, task_id, "review")

    expect(_card_in(page, "review", task_id)).to_be_visible()
    assert _step(shared_server, task_id) == "review"
    expect(page.get_by_test_id("board-notice")).to_contain_text(
        "Moved “Drag me to review” to Review"
    )


def test_a_press_on_a_card_redrawn_under_the_resting_pointer_still_drags_it(
    shared_server: ServerProcess, page: Page
) -> None:
    """The board redraws while the pointer rests on a card (an equal card takes its place);
    the button then goes down on the new card, and the drag moves the task."""
    task_id = shared_server.create_task("Redrawn under the pointer")
    open_board(page, shared_server)
    expect(_card_in(page, "backlog", task_id)).to_be_visible()
    before = page.get_by_test_id(f"task-card-{task_id}").element_handle()

    def redraw() -> None:
        other_id = shared_server.create_task("Redraws the board")
        expect(page.get_by_test_id(f"task-card-{other_id}")).to_be_visible()
        assert before.evaluate("card => !card.isConnected"), "the board did not redraw the card"

    drag_card(page, task_id, "review", before_press=redraw)

    expect(_card_in(page, "review", task_id)).to_be_visible()
    assert _step(shared_server, task_id) == "review"


def test_the_board_waits_while_a_card_is_pressed_so_a_drag_survives_a_refresh(
    shared_server: ServerProcess, page: Page
) -> None:
    """A refresh that lands between the button going down on a card and the pointer moving used
    to replace the card, and the browser then started no drag (seen as a flaky drag test)."""
    task_id = shared_server.create_task("Pressed while the board changes")
    open_board(page, shared_server)
    board = page.get_by_test_id("board")
    expect(_card_in(page, "backlog", task_id)).to_be_visible()
    expect(board).not_to_have_attribute("aria-busy", "true")

    page.get_by_test_id(f"task-card-{task_id}").hover()
    page.mouse.down()
    other_id = shared_server.create_task("Arrives mid-press")
    expect(board).to_have_attribute("aria-busy", "true")
    expect(page.get_by_test_id(f"task-card-{other_id}")).to_have_count(0)
    page.get_by_test_id("column-review").hover()
    page.mouse.up()

    expect(_card_in(page, "review", task_id)).to_be_visible()
    expect(_card_in(page, "backlog", other_id)).to_be_visible()
    expect(board).not_to_have_attribute("aria-busy", "true")
    assert _step(shared_server, task_id) == "review"


def test_a_click_on_a_card_while_the_board_waits_still_opens_the_task(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Clicked while the board changes")
    open_board(page, shared_server)
    card = page.get_by_test_id(f"task-card-{task_id}")
    card.get_by_test_id("task-title").hover()
    page.mouse.down()
    other_id = shared_server.create_task("Arrives mid-click")
    expect(page.get_by_test_id("board")).to_have_attribute("aria-busy", "true")

    page.mouse.up()  # no movement: a click, on the card it pressed

    expect(page).to_have_url(re.compile(rf"#/tasks/{task_id}"))
    expect(page.get_by_test_id(f"task-card-{other_id}")).to_be_visible()
    expect(card).to_have_class(re.compile(r"\bselected\b"))


def test_keyboard_moves_a_card_one_column_at_a_time(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Move me by keyboard")
    open_board(page, shared_server)
    card = page.get_by_test_id(f"task-card-{task_id}")
    card.get_by_role("button", name="Open “Move me by keyboard”").focus()
    page.keyboard.press("Tab")  # "◀" is disabled in the first column
    right = page.get_by_test_id(f"move-right-{task_id}")
    expect(right).to_be_focused()
    expect(right).to_have_accessible_name("Move “Move me by keyboard” to In progress")

    page.keyboard.press("Enter")

    in_progress = page.get_by_test_id("column-in_progress")
    expect(in_progress.get_by_test_id(f"task-card-{task_id}")).to_be_visible()
    expect(right).to_be_focused()
    page.keyboard.press("Enter")
    expect(_card_in(page, "review", task_id)).to_be_visible()
    assert _step(shared_server, task_id) == "review"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    expect(in_progress.get_by_test_id(f"task-card-{task_id}")).to_be_visible()


def test_a_move_the_workflow_guard_refuses_says_why_and_the_card_stays(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Waiting on me")
    start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)
    open_pending_task(page, task_id)
    page.get_by_test_id("clarification-overlay").wait_for()

    page.get_by_test_id(f"move-right-{task_id}").click()

    status = page.get_by_test_id("board-status")
    expect(status).to_contain_text("Could not move “Waiting on me” to In progress")
    expect(status).to_contain_text("answer it first")
    expect(_card_in(page, "backlog", task_id)).to_be_visible()
    assert _step(shared_server, task_id) == "backlog"


def test_board_columns_stand_side_by_side_and_fill_its_height(
    shared_server: ServerProcess, page: Page
) -> None:
    open_board(page, shared_server)
    board = box_of(page, "board")
    boxes = [
        box_of(page, f"column-{step}") for step in ("backlog", "in_progress", "review", "done")
    ]
    xs = [box["x"] for box in boxes]
    assert xs == sorted(xs) and len(set(xs)) == 4
    assert len({round(box["y"]) for box in boxes}) == 1
    for box in boxes:
        assert box["height"] >= board["height"] * 0.8, (box, board)
