"""The decision link from a phone (390x844, touch): the link is the first and only page opened;
it shows the task (its Markdown rendered), what the agent asks to run or change (the command,
the diff), and the options; a tap decides it and reaches the agent; a second person with the
same link is told it was already decided, and with what. A bad link is a clear page with 404."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ON_A_SECOND_WORKER
from tests.browser.ui_steps import screenshot, start_session
from tests.e2e.harness import ServerProcess
from tests.e2e.permission_steps import permission, wait_for_permission

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]


def _decision_url(server: ServerProcess, session_id: str) -> tuple[str, str]:
    message_id = str(wait_for_permission(server, session_id)["id"])
    url = permission(server, message_id)["decision_url"]
    assert isinstance(url, str) and url.startswith(server.url + "/p/")
    return message_id, url


def _fits_the_screen(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width}px)"


def test_a_phone_decides_a_command_through_the_link_and_a_second_person_is_told(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    task_id = shared_server.create_task(
        "Run the checks", "Run **all** of them, see [the guide](https://example.com/guide)."
    )
    session_id = start_session(shared_server, task_id, "/scenario permission kind=execute")
    message_id, url = _decision_url(shared_server, session_id)

    phone = new_page(phone=True)
    late = new_page(phone=True)  # a second person with the same link, page open before
    phone.goto(url)
    late.goto(url)
    expect(phone.get_by_test_id("decision-task-title")).to_have_text("Run the checks")
    description = phone.get_by_test_id("decision-task-description")
    expect(description.locator("strong")).to_have_text("all")
    expect(description.locator("a")).to_have_attribute("href", "https://example.com/guide")
    expect(phone.get_by_test_id("decision-title")).to_have_text("Execute README.md")
    expect(phone.get_by_test_id("decision-command")).to_have_text("$ make test")
    expect(phone.get_by_test_id("decision-option")).to_have_count(4)
    _fits_the_screen(phone)
    screenshot(phone, "decision-link-phone")

    phone.locator('[data-option-id="allow"]').tap()
    expect(phone.get_by_test_id("decision-done")).to_contain_text("You decided")
    expect(phone.get_by_test_id("decision-done")).to_contain_text("Allow")
    shared_server.wait_for_agent_text(session_id, "Permission: allow")
    assert permission(shared_server, message_id)["state"] == "approved"

    # The second person taps on the page they had open: 409 underneath, said plainly.
    late.locator('[data-option-id="reject"]').tap()
    already = late.get_by_test_id("decision-already")
    expect(already).to_contain_text("Already decided")
    expect(already).to_contain_text("Allow")
    expect(already).to_have_attribute("data-by", "someone")
    assert permission(shared_server, message_id)["decision"]["option_id"] == "allow"

    # Opening the link again in the browser that decided says so, with no options.
    phone.reload()
    expect(phone.get_by_test_id("decision-already")).to_have_attribute("data-by", "you")
    expect(phone.get_by_test_id("decision-option")).to_have_count(0)


def test_an_edit_shows_its_diff_and_a_bad_link_is_a_clear_404(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    task_id = shared_server.create_task("Update the readme", "")
    session_id = start_session(shared_server, task_id, "/scenario permission")
    _, url = _decision_url(shared_server, session_id)
    phone = new_page(phone=True)
    phone.goto(url)
    expect(phone.get_by_test_id("decision-path")).to_have_text("README.md")
    diff = phone.get_by_test_id("decision-diff")
    expect(diff.locator(".diff-add")).to_have_count(3)
    expect(diff).to_contain_text("+ Updated by the agent.")
    _fits_the_screen(phone)
    phone.locator('[data-option-id="reject"]').tap()
    expect(phone.get_by_test_id("decision-done")).to_contain_text("Reject")
    shared_server.wait_for_agent_text(session_id, "Permission: reject")

    response = phone.goto(f"{shared_server.url}/p/not-a-real-token")
    assert response is not None and response.status == 404
    expect(phone.get_by_test_id("decision-invalid")).to_contain_text("not valid")
    assert httpx.get(f"{shared_server.url}/api/v1/p/not-a-real-token").status_code == 404
