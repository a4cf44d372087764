"""A question's Slack message through its life, end to end against a fake Slack: the modal with
every question, reminders in the thread, expiry and a finished session closing the message,
and access control refusing Slack users who may not answer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests import forkserver
from tests.e2e.harness import ServerProcess, wait_until
from tests.slack.conftest import new_server, post_interaction
from tests.slack.fake_slack import Call, FakeSlack, click, option_action, signed

pytestmark = pytest.mark.e2e


def _ask(server: ServerProcess, slack: FakeSlack, scenario: str = "ask") -> tuple[str, str, Call]:
    session_id = server.start_session(
        server.create_task("Billing service"), f"/scenario {scenario}"
    )
    pending_id = server.wait_for_bundle(session_id)
    [posted] = slack.wait_for(
        "chat.postMessage", where=lambda c: pending_id in json.dumps(c.args.get("blocks"))
    )
    return session_id, pending_id, posted


def _submission(
    view: dict[str, Any], values: dict[str, Any], user: str = "U0ALICE"
) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "user": {"id": user},
        "view": {**view, "id": "V0MODAL", "hash": "h1", "state": {"values": values}},
    }


def _radio(option: str) -> dict[str, Any]:
    return {"options": {"type": "radio_buttons", "selected_option": {"value": option}}}


def test_a_modal_with_three_questions_validates_in_the_modal_and_answers_them_all(
    server: ServerProcess, slack: FakeSlack
) -> None:
    _, pending_id, posted = _ask(server, slack, "ask-multi")
    actions = next(b for b in posted.args["blocks"] if b["type"] == "actions")
    assert [e["text"]["text"] for e in actions["elements"]] == ["Skip", "Answer…"]
    opened = post_interaction(server, *signed(click(posted, "clarion_open", trigger="trig-m")))
    assert opened.status_code == 200
    [call] = slack.wait_for("views.open")
    assert call.args["trigger_id"] == "trig-m"
    view = call.args["view"]
    inputs = [b["block_id"] for b in view["blocks"] if b["type"] == "input"]
    assert inputs == [f"q{i}_{kind}" for i in range(3) for kind in ("options", "text")]
    shown = json.dumps(view["blocks"])
    for label in ("PostgreSQL", "Python", "Docker", "Bare metal"):
        assert label in shown

    partial = {"q0_options": _radio("postgres"), "q1_options": _radio("go")}
    refused = post_interaction(server, *signed(_submission(view, partial)))
    assert refused.status_code == 200
    assert refused.json() == {
        "response_action": "errors",
        "errors": {"q2_text": "Choose an option or write an answer."},
    }
    assert server.bundle(pending_id)["state"].startswith("active")  # nothing written

    values = {
        **partial,
        "q2_text": {"text": {"type": "plain_text_input", "value": "Kubernetes, please"}},
    }
    accepted = post_interaction(server, *signed(_submission(view, values)))
    assert accepted.status_code == 200 and accepted.content == b""
    server.wait_for_state(pending_id, "terminal")
    [update] = slack.wait_for("chat.update")
    text = json.dumps(update.args["blocks"], ensure_ascii=False)
    assert "Answered by alice: PostgreSQL; Go; “Kubernetes, please”" in text


def test_reminders_reply_in_the_thread_and_expiry_updates_the_message(
    tmp_path: Path, slack: FakeSlack
) -> None:
    waiting = (
        '\n[agents.builtin.waiting]\nremind_after = "1s"\nexpire_after = "3s"\non_expiry = "skip"\n'
    )
    server = new_server(tmp_path, slack, extra=waiting)
    try:
        server.start()
        _, pending_id, _ = _ask(server, slack)
        [reminder] = slack.wait_for(
            "chat.postMessage", where=lambda c: bool(c.args.get("thread_ts"))
        )
        assert reminder.args["thread_ts"] == "1700000000.000001"
        assert "Still waiting" in reminder.args["text"]
        [update] = slack.wait_for("chat.update", timeout=60)
        server.wait_for_state(pending_id, "terminal")
    finally:
        server.stop()
    text = json.dumps(update.args["blocks"])
    assert "Skipped by the waiting policy: No answer within 3s" in text
    assert '"actions"' not in text


def test_a_finished_session_closes_its_questions_message(
    server: ServerProcess, slack: FakeSlack
) -> None:
    session_id, pending_id, _ = _ask(server, slack)
    server.ok("POST", f"/task-sessions/{session_id}/finish", json={"state": "cancelled"})
    [update] = slack.wait_for("chat.update")
    assert "Closed without an answer" in json.dumps(update.args["blocks"])
    assert server.bundle(pending_id)["state"] == "terminal"


@pytest.fixture
def guarded(tmp_path: Path, slack: FakeSlack) -> Any:
    """A server with access control on; alice belongs to `default`, bob only to `ops`."""
    server = new_server(tmp_path, slack, args=["--auth"])
    tokens = {}
    url = server.database_url
    for user, workspace in (("alice", "default"), ("bob", "ops")):
        done = forkserver.run(
            ["token", "create", "--user", user, "--workspace", workspace, "--database", url],
            env=os.environ,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        tokens[user] = done.stdout.strip()
    server.headers = {"Authorization": f"Bearer {tokens['alice']}"}
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("user", "told"),
    [("U0NOBODY", "not linked to a Clarion user"), ("U0BOB", "no access to this task")],
)
def test_with_access_control_an_unmapped_or_unentitled_slack_user_is_refused_and_nothing_written(
    guarded: ServerProcess, slack: FakeSlack, user: str, told: str
) -> None:
    _, pending_id, posted = _ask(guarded, slack)
    response = post_interaction(
        guarded, *signed(click(posted, option_action(posted, "postgres"), user=user))
    )
    assert response.status_code == 200
    [ephemeral] = slack.wait_for("chat.postEphemeral")
    assert ephemeral.args["user"] == user and told in ephemeral.args["text"]
    assert guarded.bundle(pending_id)["state"].startswith("active")
    # A mapped member of the task's workspace may answer.
    ok = post_interaction(
        guarded, *signed(click(posted, option_action(posted, "postgres"), trigger="t9"))
    )
    assert ok.status_code == 200
    guarded.wait_for_state(pending_id, "terminal")
    wait_until(lambda: bool(slack.of("chat.update")), timeout=60, what="the message closed")
    assert "Answered by alice" in json.dumps(slack.of("chat.update")[0].args["blocks"])
