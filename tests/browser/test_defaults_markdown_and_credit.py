"""What a person reads about a question with a waiting policy, on a laptop (1366x850) and a
phone (390x844, touch): the default answer is named before the deadline (the question box marks
the option, and its deadline line and the answer link say which it is and when), Markdown in a
question, its options and its context is rendered rather than shown as typed, keyboard hints
stay off touch screens, and an answer is credited to whoever gave it: the expiry policy ("the
default"), the person who answered through this link ("You answered"), or someone else."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER
from tests.browser.ui_steps import screenshot, start_session
from tests.e2e.harness import ServerProcess, running_server, wait_until

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

# Questions expire after an hour with the default answer; the `quick` profile (the same
# built-in agent) expires them after 3 s.
CONFIG = f"""
[agents.builtin.waiting]
expire_after = "1h"
on_expiry = "default"

[agents.quick]
command = {json.dumps([sys.executable, "-m", "clarion.agents.builtin"])}

[agents.quick.waiting]
expire_after = "3s"
on_expiry = "default"
"""


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("defaults")
    config = tmp / "clarion.toml"
    config.write_text(CONFIG)
    with running_server(tmp, args=["--config", str(config)], CLARION_NO_SAMPLE="1") as server:
        yield server


def _markdown_question(server: ServerProcess) -> tuple[str, str, str]:
    task_id = server.create_task(
        "Choose a cache", "The **cache** decides [latency](https://example.com/latency)."
    )
    session_id = start_session(server, task_id, "/scenario ask-markdown")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_live")
    return task_id, session_id, pending_id


def test_the_question_box_names_the_default_and_renders_markdown_on_a_laptop(
    policy_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    server = policy_server
    task_id, session_id, _ = _markdown_question(server)
    page = new_page(viewport=LAPTOP)
    page.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")
    overlay = page.get_by_test_id("clarification-overlay")
    default = overlay.get_by_test_id("option-cache-none")
    expect(default.get_by_test_id("option-default")).to_have_text("default")
    expect(
        overlay.get_by_test_id("option-cache-redis").get_by_test_id("option-default")
    ).to_have_count(0)
    expect(overlay.get_by_test_id("question-deadline")).to_contain_text(
        "then the default answer: No cache"
    )
    redis = overlay.get_by_test_id("option-cache-redis")
    expect(redis.locator("strong")).to_have_text("Redis")
    expect(redis).not_to_contain_text("**")
    expect(redis.get_by_test_id("option-description").locator("code")).to_have_text("redis-server")
    expect(default.get_by_test_id("option-description").locator("a")).to_have_attribute(
        "href", "https://example.com/why"
    )
    expect(overlay.locator("kbd").first).to_be_visible()
    screenshot(page, "question-default-laptop")


def test_on_a_phone_keyboard_hints_are_hidden_and_the_options_render_markdown(
    policy_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    server = policy_server
    task_id, session_id, _ = _markdown_question(server)
    phone = new_page(phone=True)
    phone.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")
    overlay = phone.get_by_test_id("clarification-overlay")
    expect(overlay.get_by_test_id("option-cache-redis").locator("strong")).to_have_text("Redis")
    expect(overlay.get_by_test_id("option-default")).to_be_visible()
    expect(overlay.locator("kbd")).to_have_count(2)
    for kbd in overlay.locator("kbd").all():
        expect(kbd).to_be_hidden()
    phone.goto(f"{server.url}/")
    expect(phone.get_by_test_id("board-search")).to_have_attribute("placeholder", "Search tasks")


def test_the_answer_link_renders_markdown_shows_the_deadline_and_says_you_answered(
    policy_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    server = policy_server
    _, session_id, pending_id = _markdown_question(server)
    url = server.bundle(pending_id)["answer_url"]
    phone = new_page(phone=True)
    phone.goto(url)
    prompt = phone.get_by_test_id("answer-prompt")
    expect(prompt.locator("strong")).to_have_text("cache")
    expect(prompt.locator("a")).to_have_attribute("href", "https://example.com/notes")
    expect(prompt).not_to_contain_text("**")
    expect(phone.get_by_test_id("answer-context").locator("pre")).to_have_text("cache = off")
    description = phone.get_by_test_id("answer-task-description")
    expect(description.locator("a")).to_have_attribute("href", "https://example.com/latency")
    expect(phone.get_by_test_id("answer-deadline")).to_contain_text(
        "the agent gets the default answer: No cache"
    )
    expect(
        phone.locator('[data-option-id="none"]').get_by_test_id("answer-default")
    ).to_be_visible()
    expect(phone.locator('[data-option-id="redis"] strong')).to_have_text("Redis")
    screenshot(phone, "answer-link-markdown-phone")

    phone.locator('[data-option-id="redis"]').tap()
    phone.get_by_test_id("answer-submit").tap()
    expect(phone.get_by_test_id("answer-done")).to_contain_text("Answer sent")
    server.wait_for_agent_text(session_id, "You answered:")

    # The same browser opening the link again: its own answer won.
    phone.goto(url)
    already = phone.get_by_test_id("answer-already")
    expect(already).to_have_attribute("data-by", "you")
    expect(already).to_contain_text("You answered")
    expect(already).not_to_contain_text("Someone")
    # Anyone else with the link: someone answered.
    other = new_page(phone=True)
    other.goto(url)
    expect(other.get_by_test_id("answer-already")).to_contain_text("Someone answered")


def test_an_answer_the_expiry_chose_is_credited_to_the_policy_and_names_the_default(
    policy_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    server = policy_server
    task_id = server.create_task("Expiring question")
    session_id = server.start_session(task_id, "/scenario ask-default", agent="quick")
    pending_id = server.wait_for_bundle(session_id)
    url = server.wait_for_state(pending_id, "active_live")["answer_url"]
    wait_until(
        lambda: server.bundle(pending_id)["answered_by"] == "policy",
        timeout=60,
        what="the expiry's answer",
    )
    page = new_page(viewport=LAPTOP)
    page.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")
    answer = page.get_by_test_id("your-answer")
    expect(answer).to_contain_text("Answered by the expiry policy: SQLite, the default")
    expect(answer).not_to_contain_text("You answered")
    expect(answer).to_have_attribute("data-by", "policy")

    phone = new_page(phone=True)
    phone.goto(url)
    already = phone.get_by_test_id("answer-already")
    expect(already).to_contain_text("Answered by the expiry policy")
    expect(already).not_to_contain_text("Someone")
    expect(phone.get_by_test_id("answer-winner")).to_contain_text("SQLite, the default")
