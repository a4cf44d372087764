"""The question box never hides its own content: in every state (answering, the hint that says
why Submit waits, the Skip confirmation, an error line, sending) every control and line in it
can be brought into view and is not cut off or drawn over, on a laptop, a phone and a small
phone. An error line from an outage goes once the page is live again."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, Route, expect

from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER, PHONE, SMALL_PHONE
from tests.browser.ui_steps import (
    Outage,
    clipped_elements,
    open_board,
    open_pending_task,
    screenshot,
    start_session,
)
from tests.e2e.harness import ServerProcess

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

RESPOND = re.compile(r"/api/v1/clarification/[^/]+/respond$")


class HeldResponds:
    """Answers sent by the page fail as a network error (`abort`) or wait until `release`."""

    def __init__(self, page: Page) -> None:
        self.mode = "pass"
        self.held: list[Route] = []
        page.route(RESPOND, self._route)

    def _route(self, route: Route) -> None:
        if self.mode == "abort":
            route.abort("internetdisconnected")
        elif self.mode == "hold":
            self.held.append(route)
        else:
            route.continue_()

    def release(self) -> None:
        self.mode = "pass"
        for route in self.held:
            route.continue_()
        self.held.clear()


def _assert_nothing_clipped(page: Page, state: str) -> None:
    problems = clipped_elements(page, "clarification-overlay")
    assert not problems, f"{state}: {problems}"


@pytest.mark.parametrize(
    ("viewport", "phone"),
    [(SMALL_PHONE, True), (PHONE, True), (LAPTOP, False)],
    ids=["360x640", "390x844", "1366x850"],
)
def test_every_state_of_the_question_box_shows_all_of_its_content(
    shared_server: ServerProcess,
    new_page: Callable[..., Page],
    viewport: dict[str, int],
    phone: bool,
) -> None:
    page = new_page(phone=phone, viewport=viewport)
    responds = HeldResponds(page)
    task_id = shared_server.create_task(f"Nothing hidden at {viewport['width']}")
    start_session(shared_server, task_id, "/scenario ask-multi")
    open_board(page, shared_server)
    open_pending_task(page, task_id, tap=phone)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")
    _assert_nothing_clipped(page, "answering")

    overlay.get_by_test_id("option-db-sqlite").click()
    expect(overlay.get_by_test_id("submit-hint")).to_have_text(
        "Answer Language and Deployment to submit."
    )
    _assert_nothing_clipped(page, "incomplete hint")

    overlay.get_by_test_id("skip-question").click()
    expect(overlay.get_by_test_id("skip-confirm-button")).to_be_visible()
    _assert_nothing_clipped(page, "skip confirmation")
    if viewport == PHONE:
        screenshot(page, "overlay-skip-phone")
    overlay.get_by_test_id("skip-cancel").click()

    overlay.get_by_test_id("option-language-python").click()
    overlay.get_by_test_id("option-deploy-docker").click()
    responds.mode = "abort"
    overlay.get_by_test_id("submit-answer").click()
    expect(overlay.get_by_test_id("clarification-error")).to_contain_text(
        "Cannot reach the Clarion server"
    )
    _assert_nothing_clipped(page, "error line")

    responds.mode = "hold"
    overlay.get_by_test_id("submit-answer").click()
    expect(overlay.get_by_test_id("submit-answer")).to_have_text("Sending…")
    _assert_nothing_clipped(page, "submitting")
    responds.release()
    expect(overlay).to_be_hidden()
    expect(page.get_by_test_id("clarification-notice")).to_be_visible()


def test_an_outage_error_line_goes_once_the_page_is_live_again(
    shared_server: ServerProcess, page: Page
) -> None:
    outage = Outage(page)
    task_id = shared_server.create_task("Error line after an outage")
    start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)
    open_pending_task(page, task_id)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")
    overlay.get_by_test_id("option-db-postgres").click()

    outage.begin()
    expect(page.get_by_test_id("connection-status")).not_to_have_attribute("data-status", "open")
    overlay.get_by_test_id("submit-answer").click()
    error = overlay.get_by_test_id("clarification-error")
    expect(error).to_contain_text("Cannot reach the Clarion server")
    outage.end()

    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    expect(error).to_be_hidden()
    expect(overlay.get_by_test_id("option-db-postgres")).to_have_attribute("aria-pressed", "true")


@pytest.mark.parametrize(
    ("viewport", "phone", "where"),
    [
        (SMALL_PHONE, True, "session"),
        (SMALL_PHONE, True, "inbox"),
        (LAPTOP, False, "session"),
        (LAPTOP, False, "inbox"),
    ],
    ids=["360x640-session", "360x640-inbox", "1366x850-session", "1366x850-inbox"],
)
def test_the_skip_confirmation_brings_its_skip_button_into_view(
    shared_server: ServerProcess,
    new_page: Callable[..., Page],
    viewport: dict[str, int],
    phone: bool,
    where: str,
) -> None:
    page = new_page(phone=phone, viewport=viewport)
    task_id = shared_server.create_task(f"Skip in view at {viewport['width']} ({where})")
    session_id = start_session(shared_server, task_id, "/scenario ask-multi")
    pending_id = shared_server.wait_for_bundle(session_id)
    open_board(page, shared_server)
    if where == "inbox":
        page.goto(f"{shared_server.url}/#/inbox")
        item = page.get_by_test_id(f"inbox-item-{pending_id}")
        row = item.get_by_test_id("inbox-row")
        if row.get_attribute("aria-expanded") != "true":
            row.click()
        overlay = item.get_by_test_id("clarification-overlay")
    else:
        open_pending_task(page, task_id, tap=phone)
        overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")
    skip = overlay.get_by_test_id("skip-question")
    # The person has scrolled down to the buttons: Skip sits at the bottom of the screen.
    skip.evaluate("(el) => el.scrollIntoView({ block: 'end' })")
    if phone:
        skip.tap()
    else:
        skip.click()
    # Nothing scrolled by hand: the button that confirms is where the person's eyes are.
    expect(overlay.get_by_test_id("skip-confirm-button")).to_have_text("Skip questions")
    expect(overlay.get_by_test_id("skip-confirm-button")).to_be_in_viewport(ratio=1)
    expect(overlay.get_by_test_id("skip-cancel")).to_be_in_viewport(ratio=1)
    expect(overlay.get_by_test_id("skip-confirm")).to_be_in_viewport(ratio=1)
    seen = page.evaluate(
        """() => {
          const el = document.querySelector('[data-testid="skip-confirm-button"]');
          const r = el.getBoundingClientRect();
          const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
          const onTop = hit === el || el.contains(hit);
          return { top: r.top, bottom: r.bottom, vh: innerHeight, hit: onTop };
        }"""
    )
    assert seen["hit"] and seen["bottom"] <= seen["vh"], seen
    if viewport == SMALL_PHONE:
        screenshot(page, "overlay-skip-small-phone")
