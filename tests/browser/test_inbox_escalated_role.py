"""With `--auth`, `escalate_to = ["role:reviewers"]` reaches the users of the question
workspace's role, and the question is listed in their inbox, on a laptop and on a phone, though
they are members of another workspace: they can see and answer it there."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.auth.conftest import bearer, create_token, serve_with_auth
from tests.browser.conftest import LAPTOP, ON_A_SECOND_WORKER
from tests.e2e.harness import ServerProcess

pytestmark = [pytest.mark.browser, ON_A_SECOND_WORKER]

CONFIG = """
[agents.builtin.waiting]
escalate_after = "2s"
escalate_to = ["role:reviewers"]

[workspaces.alpha]
roles = { reviewers = ["bob"] }
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from serve_with_auth(f"sqlite:///{tmp_path / 'c.db'}", tmp_path, CONFIG)


def test_a_question_escalated_to_a_role_is_listed_in_its_users_inboxes_and_answered_there(
    server: ServerProcess, new_page: Callable[..., Page], tmp_path: Path
) -> None:
    alice_token = create_token(server.database_url, "alice", "alpha", tmp_path)
    bob_token = create_token(server.database_url, "bob", "beta", tmp_path)
    alice = dataclasses.replace(server, headers=bearer(alice_token))
    session_id = alice.start_session(alice.create_task("Alpha's question"), "/scenario ask")
    pending_id = alice.wait_for_bundle(session_id)

    laptop = new_page(viewport=LAPTOP)
    phone = new_page(phone=True)
    for page in (laptop, phone):
        page.add_init_script(f"localStorage.setItem('clarion.token', {json.dumps(bob_token)})")
        page.goto(f"{server.url}/#/inbox")
    for page in (laptop, phone):
        item = page.get_by_test_id(f"inbox-item-{pending_id}")
        expect(item).to_be_visible(timeout=60_000)
        expect(item.get_by_test_id("inbox-escalated")).to_have_text("Escalated to bob")
        expect(item.get_by_test_id("inbox-summary")).to_have_text(
            "Which database should the service use?"
        )
    item = laptop.get_by_test_id(f"inbox-item-{pending_id}")
    item.get_by_test_id("option-db-sqlite").click()
    item.get_by_test_id("submit-answer").click()
    expect(laptop.get_by_test_id("inbox-notice")).to_contain_text("Alpha's question")
    expect(phone.get_by_test_id(f"inbox-item-{pending_id}")).to_have_count(0)
    assert alice.bundle(pending_id)["state"] not in {"active_live", "active_detached"}
