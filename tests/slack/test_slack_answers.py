"""Answering in Slack, end to end: a real `clarion serve` posts a question to a fake Slack, and
signed payloads replaying the buttons it posted answer it through the respond path."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import ServerProcess, answer, wait_until
from tests.slack.conftest import post_interaction
from tests.slack.fake_slack import FakeSlack, click, option_action, signed

pytestmark = pytest.mark.e2e


def _ask(server: ServerProcess, slack: FakeSlack, scenario: str = "ask") -> tuple[str, str]:
    session_id = server.start_session(
        server.create_task("Billing service"), f"/scenario {scenario}"
    )
    pending_id = server.wait_for_bundle(session_id)
    posted = slack.wait_for("chat.postMessage", where=lambda c: pending_id in json.dumps(c.args))
    assert len(posted) == 1
    return session_id, pending_id


def test_a_new_question_posts_one_message_with_a_button_per_option_skip_and_answer(
    server: ServerProcess, slack: FakeSlack
) -> None:
    _ask(server, slack)
    [posted] = slack.of("chat.postMessage")
    text = json.dumps(posted.args["blocks"])
    assert "Billing service" in text and "Which database should the service use?" in text
    actions = next(b for b in posted.args["blocks"] if b["type"] == "actions")
    labels = [e["text"]["text"] for e in actions["elements"]]
    assert labels == ["PostgreSQL", "MongoDB", "SQLite", "Skip", "Answer…"]
    assert posted.token.startswith("xoxb-")


def test_a_signed_click_answers_once_names_the_mapped_user_and_updates_the_message(
    server: ServerProcess, slack: FakeSlack
) -> None:
    _, pending_id = _ask(server, slack)
    [posted] = slack.of("chat.postMessage")
    payload = click(posted, option_action(posted, "postgres"))
    response = post_interaction(server, *signed(payload))
    assert response.status_code == 200
    server.wait_for_state(pending_id, "terminal")
    assert server.bundle(pending_id)["answered_by"] == "alice"  # the mapped Clarion user
    [update] = slack.wait_for("chat.update")
    assert update.args["channel"] == "C0QUESTIONS"
    shown = json.dumps(update.args["blocks"])
    assert "Answered by alice" in shown and "PostgreSQL" in shown
    assert '"actions"' not in shown  # the buttons are gone
    # The same click again (a double click): still one answer, no second update.
    again = post_interaction(server, *signed({**payload, "trigger_id": "trig-2"}))
    assert again.status_code == 200
    conflict = server.respond(pending_id, answer(option="sqlite"))
    assert conflict.status_code == 409
    assert conflict.json()["error"]["response"]["answers"][0]["selected_options"] == ["postgres"]


def test_forged_stale_and_missing_signatures_are_401_and_write_nothing(
    server: ServerProcess, slack: FakeSlack
) -> None:
    _, pending_id = _ask(server, slack)
    [posted] = slack.of("chat.postMessage")
    payload = click(posted, option_action(posted, "postgres"))
    forged = post_interaction(server, *signed(payload, secret="not-the-secret"))
    body, headers = signed(payload, timestamp=1_000_000)
    stale = post_interaction(server, body, headers)
    missing = post_interaction(server, body, {"Content-Type": headers["Content-Type"]})
    for refused in (forged, stale, missing):
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthenticated"
    assert server.bundle(pending_id)["state"].startswith("active")


def test_not_json_unknown_types_and_unknown_questions_are_acknowledged_and_ignored(
    server: ServerProcess, slack: FakeSlack
) -> None:
    _, pending_id = _ask(server, slack)
    [posted] = slack.of("chat.postMessage")
    unknown = click(posted, option_action(posted, "postgres"))
    action = unknown["actions"][0]
    action["value"] = action["value"].replace(pending_id, "no-such-question")
    for body, headers in (
        signed(None, raw_payload="{not json"),
        signed({"type": "shortcut", "user": {"id": "U0ALICE"}}),
        signed(unknown),
    ):
        assert post_interaction(server, body, headers).status_code == 200
    assert server.bundle(pending_id)["state"].startswith("active")
    logs = server.logs()
    assert "not a JSON object" in logs and "unknown type" in logs and "unknown question" in logs


def test_skip_rejects_the_question_and_the_message_says_so(
    server: ServerProcess, slack: FakeSlack
) -> None:
    _, pending_id = _ask(server, slack)
    [posted] = slack.of("chat.postMessage")
    assert (
        post_interaction(server, *signed(click(posted, "clarion_skip", user="U0BOB"))).status_code
        == 200
    )
    [update] = slack.wait_for("chat.update")
    assert "Skipped by bob" in json.dumps(update.args["blocks"])
    wait_until(
        lambda: server.bundle(pending_id)["state"] == "terminal", timeout=60, what="terminal"
    )


def test_a_web_answer_updates_the_message_with_the_outcome(
    server: ServerProcess, slack: FakeSlack
) -> None:
    _, pending_id = _ask(server, slack)
    assert server.respond(pending_id, answer(option="sqlite")).status_code == 200
    [update] = slack.wait_for("chat.update")
    shown = json.dumps(update.args["blocks"])
    assert "Answered in Clarion" in shown and "SQLite" in shown
    assert server.bundle(pending_id)["answered_by"] == "person"
