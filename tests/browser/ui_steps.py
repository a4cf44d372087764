"""Helpers shared by the browser tests: screenshots, sessions started over HTTP, page waits."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, Route, WebSocketRoute, expect

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


def drag_card(
    page: Page, task_id: str, step: str, *, before_press: Callable[[], None] = lambda: None
) -> None:
    """Drags the task's card onto the column of `step` with the mouse, as a person does
    (`before_press` runs once the pointer rests on the card, before the button goes down).

    Not Playwright's `drag_to`: before pressing, it checks that the point hits the card it
    found, and it swallows the press (no default action, so no drag) when the press lands on
    another element. A board redraw between that check and the press replaces the card with an
    equal one, so the card stayed where it was now and then (the flaky drag test). A person's
    press after a redraw lands on the new card, and from the press on the board holds its
    redraws until the release; the raw mouse does just that."""
    card = box_of(page, f"task-card-{task_id}")
    page.mouse.move(card["x"] + card["width"] / 2, card["y"] + card["height"] / 2)
    before_press()
    page.mouse.down()
    column = box_of(page, f"column-{step}")
    page.mouse.move(column["x"] + column["width"] / 2, column["y"] + column["height"] / 2, steps=4)
    page.mouse.up()


def agent_reply(server: ServerProcess, session_id: str, prefix: str) -> str:
    """The agent's stored reply starting with `prefix` (waits for it)."""
    return server.wait_for_agent_text(session_id, prefix)


# Every visible control and line inside `root`, brought into view the way a person would
# (scrolling its scroll containers), must then lie inside each clipping ancestor and the
# viewport, and be the element found at its own centre (nothing drawn over it).
_CLIPPED = """(rootSelector) => {
  const root = document.querySelector(rootSelector);
  if (!root) return ["no " + rootSelector];
  const problems = [];
  const name = (el) => el.dataset.testid
    || `${el.tagName.toLowerCase()} "${(el.textContent || "").trim().slice(0, 40)}"`;
  const vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
  for (const el of root.querySelectorAll("button, textarea, input, a, p, span[data-testid]")) {
    if (!el.checkVisibility()) continue;
    if (!el.getBoundingClientRect().height) continue;
    el.scrollIntoView({ block: "nearest", inline: "nearest" });
    const r = el.getBoundingClientRect();
    if (r.left < -1 || r.top < -1 || r.right > vw + 1 || r.bottom > vh + 1) {
      problems.push(`${name(el)} is outside the ${vw}x${vh} viewport at ${JSON.stringify(r)}`);
    }
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX === "visible" && s.overflowY === "visible") continue;
      const b = a.getBoundingClientRect();
      const top = b.top + a.clientTop, left = b.left + a.clientLeft;
      if (r.top < top - 1 || r.left < left - 1 || r.bottom > top + a.clientHeight + 1
          || r.right > left + a.clientWidth + 1) {
        problems.push(`${name(el)} is clipped by ${a.className || a.tagName}`);
      }
    }
    const x = Math.min(Math.max(r.left + r.width / 2, 0), vw - 1);
    for (const y of [r.top + 2, r.top + r.height / 2, r.bottom - 2]) {
      const hit = document.elementFromPoint(x, Math.min(Math.max(y, 0), vh - 1));
      if (hit && !el.contains(hit) && !hit.contains(el)) {
        problems.push(`${name(el)} is covered by ${name(hit)}`);
        break;
      }
    }
  }
  return problems;
}"""


def clipped_elements(page: Page, test_id: str) -> list[str]:
    """What a person could not see or reach inside the element `test_id` (see _CLIPPED)."""
    problems: list[str] = page.evaluate(_CLIPPED, f'[data-testid="{test_id}"]')
    return problems


class Outage:
    """Cuts the page off the server on demand: the live feed closes and HTTP calls fail as a
    network error, until `end()`."""

    def __init__(self, page: Page) -> None:
        self.down = False
        self.sockets: list[WebSocketRoute] = []
        page.route_web_socket(re.compile(r"/api/v1/ws"), self._socket)
        page.route(re.compile(r"/api/v1/"), self._http)

    def _socket(self, ws: WebSocketRoute) -> None:
        if self.down:
            ws.close()
            return
        ws.connect_to_server()
        self.sockets.append(ws)

    def _http(self, route: Route) -> None:
        if self.down:
            route.abort("internetdisconnected")
        else:
            route.continue_()

    def begin(self) -> None:
        self.down = True
        for ws in self.sockets:
            ws.close()
        self.sockets.clear()

    def end(self) -> None:
        self.down = False
