"""With `--auth`, the inbox of a person outside a question's workspace gains the question when
a waiting policy escalates it to them, and loses it when it is answered, live: the page open
all along, never reloaded."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.auth.conftest import bearer, create_token, serve_with_auth
from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER
from tests.e2e.harness import ServerProcess, answer

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

CONFIG = """
[agents.builtin.waiting]
escalate_after = "3s"
escalate_to = ["bob"]
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from serve_with_auth(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, CONFIG)


def test_an_escalated_question_appears_in_an_outsiders_open_inbox_and_leaves_when_answered(
    server: ServerProcess, new_page: Callable[..., Page], tmp_path: Path
) -> None:
    alice_token = create_token(server.database_url, "alice", "alpha", tmp_path)
    bob_token = create_token(server.database_url, "bob", "beta", tmp_path)
    alice = dataclasses.replace(server, headers=bearer(alice_token))
    page = new_page(viewport=LAPTOP)
    page.add_init_script(f"localStorage.setItem('clarion.token', {json.dumps(bob_token)})")
    page.goto(f"{server.url}/#/inbox")
    expect(page.get_by_test_id("connection-status")).to_have_attribute("data-status", "open")
    expect(page.get_by_test_id("inbox-count")).to_be_hidden()

    session_id = alice.start_session(alice.create_task("Alpha's question"), "/scenario ask")
    pending_id = alice.wait_for_bundle(session_id)
    item = page.get_by_test_id(f"inbox-item-{pending_id}")
    expect(item).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("inbox-count")).to_have_text("1")
    expect(item.get_by_test_id("inbox-escalated")).to_have_text("Escalated to bob")

    assert alice.respond(pending_id, answer(option="sqlite")).status_code == 200
    expect(item).to_have_count(0)
    expect(page.get_by_test_id("inbox-count")).to_be_hidden()
