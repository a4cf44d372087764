"""The inbox shows a question's waiting policy: its deadline in words ("expires in 3 h, then
Skip"), a mark once it was escalated, and the order a person works through (the soonest
deadline first, items without one after). Its own server, configured with a policy."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER
from tests.browser.ui_steps import start_session
from tests.e2e.harness import ServerProcess, running_server, wait_until

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

# Every question expires after 2 d at the latest (a call's `expires_in` may shorten it) and is
# escalated to bob after 2 s; a permission request has no deadline. The `later` profile (the
# same built-in agent) escalates after 15 s, so a page can be open before it happens.
CONFIG = f"""
[agents.builtin.waiting]
escalate_after = "2s"
escalate_to = ["bob"]
expire_after = "2d"
on_expiry = "skip"

[agents.later]
command = {json.dumps([sys.executable, "-m", "clarion.agents.builtin"])}

[agents.later.waiting]
escalate_after = "15s"
escalate_to = ["bob"]
expire_after = "8h"
on_expiry = "skip"
"""


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("inbox-deadlines")
    config = tmp / "clarion.toml"
    config.write_text(CONFIG)
    with running_server(tmp, args=["--config", str(config)], CLARION_NO_SAMPLE="1") as server:
        yield server


def test_inbox_shows_each_deadline_and_the_escalation_and_lists_the_most_urgent_first(
    policy_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    server = policy_server
    # Asked in this order: none of them is the newest-first order the inbox would use without
    # deadlines, nor the order of asking.
    asked: dict[str, str] = {}
    for title, prompt in [
        ("Expires in 8 h", "/scenario ask-default expires=8h"),
        ("Needs a decision", "/scenario permission"),
        ("Expires in 3 h", "/scenario ask-default expires=3h"),
        ("Expires in 2 d", "/scenario ask"),
    ]:
        task_id = server.create_task(title)
        session_id = start_session(server, task_id, prompt)
        if prompt != "/scenario permission":
            asked[title] = server.wait_for_bundle(session_id)
    wait_until(
        lambda: all(server.bundle(p)["escalated_to"] == ["bob"] for p in asked.values()),
        timeout=60,
        what="the escalations",
    )
    page = new_page(viewport=LAPTOP)
    page.goto(f"{server.url}/#/inbox")
    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    expect(page.get_by_test_id("inbox-count")).to_have_text("4")

    expect(page.get_by_test_id("inbox-task")).to_have_text(
        ["Expires in 3 h", "Expires in 8 h", "Expires in 2 d", "Needs a decision"]
    )
    soonest = page.get_by_test_id(f"inbox-item-{asked['Expires in 3 h']}")
    deadline = soonest.get_by_test_id("inbox-deadline")
    # The minutes the agent took to ask may round the figure, never the words around it.
    expect(deadline).to_have_text("expires in 3 h, then Skip")
    expect(deadline).to_be_visible()
    expect(soonest.get_by_test_id("inbox-escalated")).to_have_text("Escalated to bob")
    expect(soonest.get_by_test_id("inbox-escalated")).to_be_visible()
    latest = page.get_by_test_id(f"inbox-item-{asked['Expires in 2 d']}")
    expect(latest.get_by_test_id("inbox-deadline")).to_have_text("expires in 2 d, then Skip")
    permission = page.locator("[data-kind=permission]")
    expect(permission.get_by_test_id("inbox-deadline")).to_have_count(0)
    expect(permission.get_by_test_id("inbox-escalated")).to_have_count(0)

    # The session's own question box says the same.
    soonest.get_by_test_id("inbox-row").click()
    soonest.get_by_test_id("inbox-open").click()
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay.get_by_test_id("question-deadline")).to_have_text("expires in 3 h, then Skip")
    expect(overlay.get_by_test_id("question-escalated")).to_have_text("Escalated to bob")
    expect(overlay.get_by_test_id("question-deadline")).to_be_in_viewport()


def test_the_question_box_gains_the_escalation_mark_when_it_happens(
    policy_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    server = policy_server
    task_id = server.create_task("Escalated while open")
    session_id = server.start_session(task_id, "/scenario ask", agent="later")
    pending_id = server.wait_for_bundle(session_id)
    page = new_page(viewport=LAPTOP)
    page.goto(f"{server.url}/#/tasks/{task_id}/sessions/{session_id}")
    overlay = page.get_by_test_id("clarification-overlay")
    expect(overlay.get_by_test_id("question-deadline")).to_have_text("expires in 8 h, then Skip")
    # Counted on the page, then read from the server: when the server had not escalated it yet,
    # the page cannot have shown the mark, so the one awaited below came over the live feed.
    marks_before = overlay.get_by_test_id("question-escalated").count()
    if server.bundle(pending_id)["escalated_to"] == []:
        assert marks_before == 0
    expect(overlay.get_by_test_id("question-escalated")).to_have_text(
        "Escalated to bob", timeout=60_000
    )
    assert server.bundle(pending_id)["escalated_to"] == ["bob"]
