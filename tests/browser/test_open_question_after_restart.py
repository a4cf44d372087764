"""A question asked before a restart is still open after it, and every page says so: the
transcript's agent line says the question was left open (never "send your prompt again"), the
inbox shows no raw tool error as context, the message box warns before a new message sets the
question aside, and once it is set aside the question reads as superseded.

A graceful stop (SIGTERM, as `ServerProcess.stop` sends) detaches the question and then closes
the agents' event streams: the built-in agent either reads the detached result (`Question left
open; ending turn.`) or, when its stream closes first, reports the cut stream, which the
transcript words as "The question is still open". Either is a right reading of the same state,
so the pages are checked for whichever the agent said."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER, SMALL_PHONE
from tests.browser.ui_steps import open_board, start_session
from tests.conftest import fresh_database_url
from tests.e2e.harness import ServerProcess, wait_until

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

# What the transcript shows for each of the agent's two readings of the stop.
STILL_OPEN = re.compile("Question left open|The question is still open")


@pytest.fixture
def restarted(tmp_path: Path) -> Iterator[tuple[ServerProcess, str, str, str]]:
    """A server whose built-in agent asked, then restarted: (server, task, session, pending)."""
    with fresh_database_url("sqlite", tmp_path) as url:
        workdir = tmp_path / "server"
        workdir.mkdir()
        server = ServerProcess(database_url=url, workdir=workdir, env={"CLARION_NO_SAMPLE": "1"})
        try:
            server.start()
            task_id = server.create_task("Pick the database")
            session_id = start_session(server, task_id, "/scenario ask")
            pending_id = server.wait_for_bundle(session_id)
            server.wait_for_state(pending_id, "active_live")
            server.stop()
            server.start()
            wait_until(
                lambda: any(
                    "Question left open" in t or "Could not ask the question" in t
                    for t in server.agent_texts(session_id)
                ),
                what="the agent's reading of the stop",
            )
            yield server, task_id, session_id, pending_id
        finally:
            server.stop()


def test_after_a_restart_the_pages_say_the_question_is_open_and_warn_before_setting_it_aside(
    restarted: tuple[ServerProcess, str, str, str], new_page: Callable[..., Page]
) -> None:
    server, task_id, session_id, pending_id = restarted
    assert server.bundle(pending_id)["state"] in {"active_live", "active_detached"}
    page = new_page(viewport=LAPTOP)
    open_board(page, server)
    page.goto(f"{server.url}/#/inbox")
    item = page.get_by_test_id(f"inbox-item-{pending_id}")
    expect(item).to_be_visible()
    expect(item).not_to_contain_text("SSE stream")
    expect(item).not_to_contain_text("Could not ask the question")

    page.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")
    transcript = page.get_by_test_id("transcript")
    expect(transcript).to_contain_text(STILL_OPEN)
    expect(transcript).not_to_contain_text("send your prompt again")
    expect(page.get_by_test_id("clarification-overlay")).to_be_visible()
    # The warning is there before anything is sent.
    warning = page.get_by_test_id("prompt-sets-question-aside")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("sets the open question aside")

    answer_url = server.bundle(pending_id)["answer_url"]
    page.get_by_test_id("clarification-overlay").press("Escape")
    page.get_by_test_id("prompt-input").fill("/scenario echo on we go")
    page.get_by_test_id("prompt-send").click()
    server.wait_for_agent_text(session_id, "echo: on we go")
    assert server.bundle(pending_id)["state"] == "superseded_history"
    question = page.locator(f'[data-type="clarification_request"][data-pending-id="{pending_id}"]')
    expect(question.get_by_test_id("question-status")).to_have_text("superseded")
    expect(page.get_by_test_id("prompt-sets-question-aside")).to_be_hidden()
    # Its answer link says the same.
    phone = new_page(phone=True)
    phone.goto(answer_url)
    expect(phone.get_by_test_id("answer-already")).to_contain_text("Set aside")
    expect(phone.get_by_test_id("answer-form")).to_have_count(0)


def test_on_a_small_phone_the_transcript_says_the_question_is_still_open(
    restarted: tuple[ServerProcess, str, str, str], new_page: Callable[..., Page]
) -> None:
    server, task_id, session_id, _ = restarted
    page = new_page(phone=True, viewport=SMALL_PHONE)
    page.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")
    expect(page.get_by_test_id("clarification-overlay")).to_be_visible()
    expect(page.get_by_test_id("transcript")).to_contain_text(STILL_OPEN)
    expect(page.get_by_test_id("prompt-sets-question-aside")).to_be_attached()
