"""Helpers shared by the browser tests: screenshots, sessions started over HTTP, page waits."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.harness import ServerProcess

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def screenshot(page: Page, name: str) -> None:
    """Saves docs/screenshots/<name>.png for people to look at, when CLARION_SCREENSHOTS=1: an
    ordinary run leaves the checkout as it found it (and two runs never write the same file)."""
    if os.environ.get("CLARION_SCREENSHOTS") != "1":
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), animations="disabled", caret="hide")


def start_session(
    server: ServerProcess, task_id: str, prompt: str, *, primary: bool | None = None
) -> str:
    body: dict[str, Any] = {"agent": "builtin", "prompt": prompt}
    if primary is not None:
        body["is_primary"] = primary
    return str(
        server.ok("POST", f"/tasks/{task_id}/task-sessions", 201, json=body)["session"]["id"]
    )


def open_board(page: Page, server: ServerProcess) -> None:
    """Loads the board and waits until the live feed is open, so no event is missed, and the
    board has rendered its columns (the first render follows the first read, which may come
    after the feed opens)."""
    page.goto(f"{server.url}/")
    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    expect(page.get_by_test_id("column-backlog")).to_be_visible()


def open_pending_task(page: Page, task_id: str, *, tap: bool = False) -> None:
    """Opens a task from the board once its card shows the question icon (the summary
    advertises the question, so pending-owner navigation selects the owning session)."""
    card = page.get_by_test_id(f"task-card-{task_id}")
    expect(card.get_by_test_id("pending-icon")).to_have_attribute("data-action", "clarification")
    if tap:
        card.tap()
    else:
        card.click()


_MEASURE = """(selector) => {
  const element = document.querySelector(selector);
  if (!element) return null;
  const r = element.getBoundingClientRect();
  return r.width && r.height ? { x: r.x, y: r.y, width: r.width, height: r.height } : null;
}"""


def box_of(page: Page, *test_ids: str) -> dict[str, float]:
    """The on-screen box of the element named by `test_ids` (each inside the one before),
    found and measured in one step of the page's own thread. The board and the panels redraw
    on every event, so a locator's element can be replaced between being found and being
    measured (Playwright then reports no box); this waits until the element is there and
    drawn, and measures that one."""
    selector = " ".join(f'[data-testid="{test_id}"]' for test_id in test_ids)
    box: dict[str, float] = page.wait_for_function(_MEASURE, arg=selector).json_value()
    return box


def agent_reply(server: ServerProcess, session_id: str, prefix: str) -> str:
    """The agent's stored reply starting with `prefix` (waits for it)."""
    return server.wait_for_agent_text(session_id, prefix)
