"""The transcript as a person reads it: the agent's start as one line before the first turn,
who said what, the built-in agent's answer echo in words instead of JSON, and a detached answer
where it happened: after the agent's "No answer yet; ending turn."."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.ui_steps import open_board, open_pending_task, start_session
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.browser


def test_a_transcript_starts_in_order_names_its_speakers_and_shows_no_raw_json(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Read me a transcript")
    session_id = start_session(shared_server, task_id, "/scenario ask")
    open_board(page, shared_server)
    open_pending_task(page, task_id)
    overlay = page.get_by_test_id("clarification-overlay")
    overlay.get_by_test_id("option-db-postgres").click()
    overlay.get_by_test_id("submit-answer").click()

    transcript = page.get_by_test_id("transcript")
    expect(transcript).to_contain_text("You answered: db: postgres")
    expect(transcript).not_to_contain_text('{"')
    boundaries = transcript.locator(".turn-boundary")
    expect(boundaries.nth(0)).to_contain_text("Agent started")
    expect(boundaries.nth(1)).to_contain_text("Turn started")
    prompt = transcript.locator("[data-type=message][data-author=user]").first
    expect(prompt.get_by_test_id("speaker")).to_have_text("You")
    reply = transcript.locator("[data-type=message][data-author=agent]").last
    expect(reply.get_by_test_id("speaker")).to_have_text("Agent")
    assert shared_server.wait_for_agent_text(session_id, "You answered:").startswith(
        'You answered: {"db"'
    ), "the agent's own text is unchanged; only the page reads it out in words"


def test_a_detached_answer_reads_after_what_the_agent_said_when_it_stopped_waiting(
    shared_server: ServerProcess, page: Page
) -> None:
    task_id = shared_server.create_task("Answer after it gave up")
    session_id = start_session(shared_server, task_id, "/scenario ask-timeout t=1")
    pending_id = shared_server.wait_for_bundle(session_id)
    shared_server.wait_for_agent_text(session_id, "No answer yet; ending turn.")
    shared_server.wait_for_state(pending_id, "active_detached")
    open_board(page, shared_server)
    open_pending_task(page, task_id)
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay).to_have_attribute("data-state", "active_detached")
    overlay.get_by_test_id("option-db-mongodb").click()
    overlay.get_by_test_id("submit-answer").click()

    transcript = page.get_by_test_id("transcript")
    late = transcript.locator("[data-testid^=late-answer-]")
    expect(late.get_by_test_id("your-answer-text")).to_have_text("MongoDB")
    order = transcript.evaluate(
        """el => { const all = [...el.children];
          const gaveUp = all.findIndex(c => c.textContent.includes("No answer yet; ending turn."));
          const answer = all.findIndex(c => (c.dataset.testid || "").startsWith("late-answer-"));
          return { gaveUp, answer }; }"""
    )
    assert 0 <= order["gaveUp"] < order["answer"], order
