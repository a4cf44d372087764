"""The answer link from a phone (390x844, touch): the link is the first and only page opened;
it shows the task, the agent's context and the questions, answers them, and a second person
with the same link (or the first one, submitting again) is told it was already answered, by
whom and with what. A bad link is a clear page with 404."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ON_A_SECOND_WORKER
from tests.browser.ui_steps import screenshot, start_session
from tests.e2e.harness import ServerProcess

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]


def _answer_url(server: ServerProcess, pending_id: str) -> str:
    server.wait_for_state(pending_id, "active_live")
    url = server.bundle(pending_id)["answer_url"]
    assert isinstance(url, str) and url.startswith(server.url + "/a/")
    return url


def _fits_the_screen(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width}px)"


def test_a_phone_answers_through_the_link_with_no_other_page_opened_first(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    task_id = shared_server.create_task(
        "Set up the billing service", "Billing needs its own service before the launch."
    )
    session_id = start_session(shared_server, task_id, "/scenario ask-multi")
    pending_id = shared_server.wait_for_bundle(session_id)
    url = _answer_url(shared_server, pending_id)

    phone = new_page(phone=True)
    late = new_page(phone=True)  # a second person with the same link, page open before
    phone.goto(url)
    late.goto(url)
    expect(phone.get_by_test_id("answer-task-title")).to_have_text("Set up the billing service")
    expect(phone.get_by_test_id("answer-task-description")).to_have_text(
        "Billing needs its own service before the launch."
    )
    expect(phone.get_by_test_id("answer-context")).to_contain_text("new backend service")
    expect(phone.get_by_test_id("answer-question")).to_have_count(3)
    _fits_the_screen(phone)
    screenshot(phone, "answer-link-phone")

    # Sending with a question unanswered says which, and sends nothing.
    phone.locator('[data-option-id="sqlite"]').tap()
    phone.get_by_test_id("answer-submit").tap()
    expect(phone.get_by_test_id("answer-message")).to_contain_text("Language")
    assert shared_server.bundle(pending_id)["state"] == "active_live"

    phone.locator('[data-option-id="go"]').tap()
    expect(phone.get_by_test_id("answer-message")).to_be_empty()
    phone.get_by_test_id("answer-text").nth(2).fill("Whatever ships fastest")
    phone.get_by_test_id("answer-submit").tap()
    expect(phone.get_by_test_id("answer-done")).to_contain_text("Answer sent")
    expect(phone.get_by_test_id("answer-winner")).to_contain_text("SQLite")
    screenshot(phone, "answer-link-phone-sent")
    text = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert "sqlite" in text and "go" in text and "Whatever ships fastest" in text

    # The second person submits on the page they had open: 409 underneath, said plainly.
    late.locator('[data-option-id="postgres"]').tap()
    late.locator('[data-option-id="rust"]').tap()
    late.locator('[data-option-id="docker"]').tap()
    late.get_by_test_id("answer-submit").tap()
    expect(late.get_by_test_id("answer-already")).to_contain_text("Already answered")
    expect(late.get_by_test_id("answer-winner")).to_contain_text("SQLite")
    expect(late.get_by_test_id("answer-winner")).to_contain_text("Whatever ships fastest")

    # Opening the link again afterwards says the same, with no form.
    again = new_page(phone=True)
    again.goto(url)
    expect(again.get_by_test_id("answer-already")).to_be_visible()
    expect(again.get_by_test_id("answer-form")).to_have_count(0)


def test_a_bad_link_is_a_clear_page_and_a_404(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    phone = new_page(phone=True)
    response = phone.goto(f"{shared_server.url}/a/not-a-real-token")
    assert response is not None and response.status == 404
    expect(phone.get_by_test_id("answer-invalid")).to_contain_text("not valid")
    assert httpx.get(f"{shared_server.url}/api/v1/a/not-a-real-token").status_code == 404
