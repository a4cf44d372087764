"""The overlay as a person uses it: typed answers kept across steps, Skip confirmed first and
named one way, focus kept inside the dialog and given back, the option group named, and a focus
ring that is not the selected style."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.ui_steps import open_board, open_pending_task, start_session
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser


def _open_question(page: Page, server: ServerProcess, title: str, scenario: str) -> Locator:
    task_id = server.create_task(title)
    start_session(server, task_id, scenario)
    open_board(page, server)
    open_pending_task(page, task_id)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_live")
    return overlay


def test_typed_answer_survives_next_back_and_step_chips_and_submit_says_why_it_waits(
    shared_server: ServerProcess, page: Page
) -> None:
    overlay = _open_question(page, shared_server, "Keep what I typed", "/scenario ask-multi")
    custom = overlay.get_by_test_id("custom-text-db")
    custom.click()
    custom.press_sequentially("DuckDB, embedded")
    hint = overlay.get_by_test_id("submit-hint")
    expect(hint).to_contain_text("Language")
    expect(hint).to_contain_text("Deployment")

    overlay.get_by_test_id("step-next").click()

    expect(overlay.get_by_test_id("clarification-question")).to_have_attribute(
        "data-question-id", "language"
    )
    expect(overlay.get_by_test_id("step-1")).to_have_class(re.compile(r"\banswered\b"))
    overlay.get_by_test_id("step-back").click()
    expect(overlay.get_by_test_id("custom-text-db")).to_have_value("DuckDB, embedded")
    overlay.get_by_test_id("step-3").click()
    overlay.get_by_test_id("option-deploy-docker").click()
    overlay.get_by_test_id("step-1").click()
    expect(overlay.get_by_test_id("custom-text-db")).to_have_value("DuckDB, embedded")
    expect(overlay.get_by_test_id("submit-answer")).to_be_disabled()
    expect(hint).to_have_text(re.compile(r"Answer .*Language.* to submit"))
    overlay.get_by_test_id("step-2").click()
    overlay.get_by_test_id("option-language-python").click()
    expect(overlay.get_by_test_id("submit-answer")).to_be_enabled()
    expect(hint).to_be_hidden()
    overlay.get_by_test_id("submit-answer").click()

    expect(overlay).to_be_hidden()
    session_id = page.get_by_test_id("session-view").get_attribute("data-session-id")
    assert session_id
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert json.loads(reply.removeprefix("You answered: "))["db"] == {
        "selected_options": [],
        "custom_text": "DuckDB, embedded",
    }


def test_skip_asks_first_and_every_word_says_skip(shared_server: ServerProcess, page: Page) -> None:
    overlay = _open_question(page, shared_server, "Skip after asking", "/scenario ask-multi")
    pending_id = overlay.get_attribute("data-pending-id")
    assert pending_id

    overlay.get_by_test_id("skip-question").click()
    confirm = overlay.get_by_test_id("skip-confirm")
    expect(confirm).to_contain_text("Skip all 3 questions?")
    overlay.get_by_test_id("skip-cancel").click()
    expect(confirm).to_be_hidden()
    assert shared_server.bundle(pending_id)["state"] == "active_live"

    overlay.get_by_test_id("skip-question").click()
    overlay.get_by_test_id("skip-confirm-button").click()

    expect(overlay).to_be_hidden()
    expect(page.get_by_test_id("clarification-notice")).to_contain_text("Questions skipped")
    statuses = page.get_by_test_id("transcript").get_by_test_id("question-status")
    expect(statuses).to_have_count(3)
    expect(statuses).to_have_text(["skipped", "skipped", "skipped"])
    expect(page.get_by_test_id("your-answer-text")).to_have_text(["Skipped"] * 3)


def test_overlay_keeps_focus_returns_it_and_names_its_options(
    shared_server: ServerProcess, page: Page
) -> None:
    overlay = _open_question(page, shared_server, "Keyboard only", "/scenario ask")
    expect(overlay).to_be_focused()
    inside = (
        "() => document.querySelector('[data-testid=clarification-overlay]')"
        ".contains(document.activeElement)"
    )
    for _ in range(14):
        page.keyboard.press("Tab")
        assert page.evaluate(inside), "Tab left the dialog"
    for _ in range(4):
        page.keyboard.press("Shift+Tab")
        assert page.evaluate(inside), "Shift+Tab left the dialog"

    page.keyboard.press("Escape")
    expect(overlay).to_be_hidden()
    show = page.get_by_test_id("show-question")
    expect(show).to_be_focused()
    page.keyboard.press("Enter")
    expect(overlay).to_be_visible()
    assert page.evaluate(inside)
    page.keyboard.press("Escape")
    expect(show).to_be_focused()
    show.click()

    group = page.get_by_role("group", name="Which database should the service use?")
    expect(group).to_be_visible()
    selected = overlay.get_by_test_id("option-db-sqlite")
    selected.click()
    focused = overlay.get_by_test_id("option-db-postgres")
    focused.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # keyboard focus, so :focus-visible applies
    expect(focused).to_be_focused()
    style = """el => { const s = getComputedStyle(el);
        return {outline: s.outlineStyle, outlineColor: s.outlineColor, border: s.borderColor,
                background: s.backgroundColor, shadow: s.boxShadow}; }"""
    ring = focused.evaluate(style)
    chosen = selected.evaluate(style)
    assert ring["outline"] != "none"
    assert ring["outlineColor"] not in (chosen["border"], chosen["outlineColor"])
    assert ring["background"] != chosen["background"]
    expect(selected).to_contain_text("✓")
    expect(focused).not_to_contain_text("✓")
