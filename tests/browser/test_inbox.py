"""The inbox page: every waiting question and permission request across tasks, answerable in
place, live; the count in the tab title; an opt-in notification while the tab is hidden. Its
own server, so the counts are exactly this module's items."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER
from tests.browser.ui_steps import screenshot, start_session
from tests.e2e.harness import ServerProcess, running_server

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

# A stand-in Notification that records what the page shows, and a switch for "tab hidden".
NOTIFICATION_STUB = """
window.__notes = [];
window.__hidden = false;
Object.defineProperty(document, "hidden", { get: () => window.__hidden });
Object.defineProperty(document, "visibilityState",
  { get: () => (window.__hidden ? "hidden" : "visible") });
window.Notification = class {
  static permission = "default";
  static async requestPermission() { window.Notification.permission = "granted"; return "granted"; }
  constructor(title, options) { window.__notes.push({ title, body: options && options.body }); }
};
"""


@pytest.fixture(scope="module")
def inbox_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("inbox-server")) as server:
        yield server


def _open_inbox(page: Page, server: ServerProcess) -> None:
    page.goto(f"{server.url}/#/inbox")
    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    expect(page.get_by_test_id("inbox-view")).to_be_visible()


def test_inbox_lists_waiting_items_answers_them_in_place_and_counts_in_the_title(
    inbox_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    ask_task = inbox_server.create_task("Pick the database")
    ask_session = start_session(inbox_server, ask_task, "/scenario ask")
    perm_task = inbox_server.create_task("Update the README")
    perm_session = start_session(inbox_server, perm_task, "/scenario permission")
    pending_id = inbox_server.wait_for_bundle(ask_session)
    inbox_server.wait_for_state(pending_id, "active_live")
    page = new_page()
    _open_inbox(page, inbox_server)

    expect(page).to_have_title("(2) Clarion")
    expect(page.get_by_test_id("inbox-count")).to_have_text("2")
    question = page.get_by_test_id(f"inbox-item-{pending_id}")
    expect(question.get_by_test_id("inbox-task")).to_have_text("Pick the database")
    question.get_by_test_id("inbox-row").click()
    expect(question.get_by_test_id("question-prompt")).to_have_text(
        "Which database should the service use?"
    )
    permission = page.locator("[data-kind=permission]")
    expect(permission.get_by_test_id("inbox-task")).to_have_text("Update the README")
    expect(permission.get_by_test_id("inbox-open")).to_have_attribute(
        "href", f"#/tasks/{perm_task}/sessions/{perm_session}"
    )
    permission.get_by_test_id("inbox-row").click()

    question.get_by_test_id("option-db-sqlite").click()
    question.get_by_test_id("submit-answer").click()

    expect(question).to_have_count(0)
    expect(page).to_have_title("(1) Clarion")
    assert "sqlite" in inbox_server.wait_for_agent_text(ask_session, "You answered:")
    permission.get_by_test_id("permission-option-allow").click()
    expect(permission).to_have_count(0)
    expect(page).to_have_title("Clarion")
    expect(page.get_by_test_id("inbox-status")).to_have_text("Nothing is waiting for you.")

    # Live: a question asked while the page is open appears without a reload.
    later_task = inbox_server.create_task("Asked while I watch")
    later = start_session(inbox_server, later_task, "/scenario ask")
    later_id = inbox_server.wait_for_bundle(later)
    expect(page.get_by_test_id(f"inbox-item-{later_id}")).to_be_visible()
    expect(page).to_have_title("(1) Clarion")
    page.get_by_test_id(f"inbox-item-{later_id}").get_by_test_id("option-db-postgres").click()
    page.get_by_test_id(f"inbox-item-{later_id}").get_by_test_id("submit-answer").click()
    expect(page).to_have_title("Clarion")


def test_a_press_on_a_permission_survives_a_new_item_arriving_before_the_release(
    inbox_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    """A live refresh that lands between the button going down on Allow and coming up used to
    draw the panel's buttons anew (and re-insert every line): the release then fell on another
    element, no click happened and the decision was never sent (seen as a flaky inbox test).
    The refresh here is one another session's turn causes, which changes nothing on screen."""
    perm_task = inbox_server.create_task("Pressed while another session works")
    perm_session = start_session(inbox_server, perm_task, "/scenario permission")
    page = new_page()
    _open_inbox(page, inbox_server)
    permission = page.locator("[data-kind=permission]")
    allow = permission.get_by_test_id("permission-option-allow")
    expect(allow).to_be_visible()  # the only item opens by itself
    pressed = allow.element_handle()
    inbox_list = page.get_by_test_id("inbox-list")
    reads = inbox_list.get_attribute("data-reads")

    allow.hover()
    page.mouse.down()
    other = start_session(
        inbox_server, inbox_server.create_task("Busy elsewhere"), "/scenario echo hi"
    )
    inbox_server.wait_for_agent_text(other, "echo: hi")
    expect(inbox_list).not_to_have_attribute("data-reads", reads or "")
    assert pressed.evaluate("button => button.isConnected"), "the pressed button was replaced"
    page.mouse.up()

    expect(permission).to_have_count(0)
    assert "allow" in inbox_server.wait_for_agent_text(perm_session, "Permission:")
    expect(page.get_by_test_id("inbox-status")).to_have_text("Nothing is waiting for you.")


def test_the_only_item_stays_open_when_another_arrives(
    inbox_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    first = start_session(inbox_server, inbox_server.create_task("Read first"), "/scenario ask")
    first_id = inbox_server.wait_for_bundle(first)
    page = new_page()
    _open_inbox(page, inbox_server)
    first_item = page.get_by_test_id(f"inbox-item-{first_id}")
    expect(first_item.get_by_test_id("inbox-row")).to_have_attribute("aria-expanded", "true")

    second = start_session(inbox_server, inbox_server.create_task("Came later"), "/scenario ask")
    second_id = inbox_server.wait_for_bundle(second)
    second_item = page.get_by_test_id(f"inbox-item-{second_id}")
    expect(second_item).to_be_visible()
    expect(second_item.get_by_test_id("inbox-row")).to_have_attribute("aria-expanded", "false")
    expect(first_item.get_by_test_id("inbox-row")).to_have_attribute("aria-expanded", "true")
    for pending_id in (first_id, second_id):
        inbox_server.respond(
            pending_id, {"rejected": True, "reject_reason": "User skipped", "answers": []}
        )
    expect(page.get_by_test_id("inbox-status")).to_have_text("Nothing is waiting for you.")


def test_opted_in_tab_is_notified_of_a_new_item_while_hidden(
    inbox_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page()
    page.context.grant_permissions(["notifications"], origin=inbox_server.url)
    page.add_init_script(NOTIFICATION_STUB)
    _open_inbox(page, inbox_server)
    notify = page.get_by_test_id("inbox-notify")
    notify.click()
    expect(notify).to_have_text("Notifications on")
    expect(page).to_have_title(re.compile(r"Clarion$"))
    page.evaluate("() => { window.__hidden = true; }")

    task_id = inbox_server.create_task("Ask me when I look away")
    session_id = start_session(inbox_server, task_id, "/scenario ask")
    pending_id = inbox_server.wait_for_bundle(session_id)

    page.wait_for_function("() => window.__notes.length > 0")
    notes = page.evaluate("() => window.__notes")
    assert notes == [
        {
            "title": "Agent asks in Ask me when I look away",
            "body": "Which database should the service use?",
        }
    ]
    inbox_server.respond(
        pending_id, {"rejected": True, "reject_reason": "User skipped", "answers": []}
    )


def _one_line(page: Page, item: str) -> float:
    box = page.get_by_test_id(item).bounding_box()
    assert box
    return box["height"]


def test_inbox_is_a_compact_newest_first_list_that_opens_in_place_with_context(
    inbox_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    older_task = inbox_server.create_task("Orders backend", "Build the **orders** service.")
    older = start_session(inbox_server, older_task, "/scenario echo looking at the repository")
    inbox_server.wait_for_agent_text(older, "echo: looking")
    inbox_server.ok(
        "POST", f"/task-sessions/{older}/prompt", 202, json={"text": "/scenario ask-multi"}
    )
    older_id = inbox_server.wait_for_bundle(older)
    newer_task = inbox_server.create_task("Pick a cache")
    newer = start_session(inbox_server, newer_task, "/scenario ask")
    newer_id = inbox_server.wait_for_bundle(newer)
    page = new_page(viewport=LAPTOP)
    _open_inbox(page, inbox_server)

    items = page.get_by_test_id("inbox-list").locator(":scope > li")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_attribute("data-testid", f"inbox-item-{newer_id}")
    expect(items.nth(1)).to_have_attribute("data-testid", f"inbox-item-{older_id}")
    older_item = page.get_by_test_id(f"inbox-item-{older_id}")
    row = older_item.get_by_test_id("inbox-row")
    expect(row.get_by_test_id("inbox-summary")).to_have_text(
        "Which database should the service use? (+2 more)"
    )
    expect(row.get_by_test_id("inbox-age")).to_have_text(re.compile(r"just now|\d+ min ago"))
    expect(row.get_by_test_id("inbox-state")).to_have_text("Agent waiting")
    for item in (f"inbox-item-{older_id}", f"inbox-item-{newer_id}"):
        assert _one_line(page, item) <= 60, "an unopened item is one line"
    expect(older_item.get_by_test_id("clarification-overlay")).to_be_hidden()

    row.click()
    expect(row).to_have_attribute("aria-expanded", "true")
    expect(older_item.get_by_test_id("clarification-context")).to_contain_text(
        "I am setting up a new backend service"
    )
    description = older_item.get_by_test_id("inbox-task-description")
    expect(description.locator("strong")).to_have_text("orders")
    expect(older_item.get_by_test_id("inbox-last-message")).to_have_text(
        "echo: looking at the repository"
    )
    older_item.get_by_test_id("custom-text-db").fill("DuckDB, kept through a reload")
    screenshot(page, "inbox")

    page.reload()
    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    page.get_by_test_id(f"inbox-item-{older_id}").get_by_test_id("inbox-row").click()
    expect(
        page.get_by_test_id(f"inbox-item-{older_id}").get_by_test_id("custom-text-db")
    ).to_have_value("DuckDB, kept through a reload")

    phone = new_page(phone=True)
    _open_inbox(phone, inbox_server)
    phone_row = phone.get_by_test_id(f"inbox-item-{newer_id}").get_by_test_id("inbox-row")
    expect(phone_row).to_be_visible()
    assert phone_row.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "the line fits a phone"
    assert _one_line(phone, f"inbox-item-{newer_id}") <= 100
    for pending_id in (older_id, newer_id):
        inbox_server.respond(
            pending_id, {"rejected": True, "reject_reason": "User skipped", "answers": []}
        )
