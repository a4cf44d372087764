"""Answering in Slack under faults and races, end to end against a fake Slack: a server killed
between the acknowledgement and the answer, a storm of Slack retries, a click racing a web
answer, Slack refusing calls, and both databases."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from tests.e2e.harness import ServerProcess, answer, wait_until
from tests.slack.conftest import new_server, post_interaction
from tests.slack.fake_slack import FakeSlack, click, fake_slack, option_action, signed

pytestmark = pytest.mark.e2e


def _ask(server: ServerProcess, slack: FakeSlack) -> tuple[str, str]:
    session_id = server.start_session(server.create_task("Billing service"), "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)
    slack.wait_for("chat.postMessage", where=lambda c: pending_id in json.dumps(c.args))
    return session_id, pending_id


def _interactions(db: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT pending_id, outcome FROM slack_interactions"))


def test_a_server_killed_after_the_ack_answers_the_click_exactly_once_after_restart(
    tmp_path: Path, slack: FakeSlack
) -> None:
    server = new_server(tmp_path, slack)
    db = tmp_path / "clarion.db"
    try:
        server.start(failpoints="slack.after_ack=crash")
        session_id, pending_id = _ask(server, slack)
        [posted] = slack.of("chat.postMessage")
        response = post_interaction(
            server, *signed(click(posted, option_action(posted, "postgres")))
        )
        assert response.status_code == 200  # acknowledged before the answer
        assert server.wait_exit(30) == 137  # killed between the acknowledgement and the answer
        assert _interactions(db) == [(pending_id, None)]  # queued, not answered

        server.start()
        bundle = server.wait_for_state(pending_id, "terminal")
        wait_until(
            lambda: _interactions(db) == [(pending_id, "answered")],
            timeout=60,
            what="the queued click answered",
        )
        wait_until(
            lambda: server.resume_prompts_seen(session_id) == 1,
            timeout=60,
            what="the agent resumed with the answer",
        )
        [update] = slack.wait_for("chat.update")
        assert server.resume_prompts_seen(session_id) == 1
    finally:
        server.stop()
    assert bundle["state"] == "terminal"
    assert "Answered by alice" in json.dumps(update.args["blocks"])
    top_level = [c for c in slack.of("chat.postMessage") if not c.args.get("thread_ts")]
    assert len(top_level) == 1  # the question was not posted twice
    # The restart detached the question: that is said in the message's thread.
    [reply] = [c for c in slack.of("chat.postMessage") if c.args.get("thread_ts")]
    assert reply.args["thread_ts"] == "1700000000.000001" and "still open" in reply.args["text"]


def test_a_retry_storm_and_double_clicks_answer_once(
    tmp_path: Path, slack: FakeSlack, server: ServerProcess
) -> None:
    _, pending_id = _ask(server, slack)
    [posted] = slack.of("chat.postMessage")
    body, headers = signed(click(posted, option_action(posted, "mongodb")))
    statuses: list[int] = []

    def send(retry: int) -> None:
        sent = {**headers, "X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        statuses.append(post_interaction(server, body, sent).status_code)

    threads = [threading.Thread(target=send, args=(n % 3,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 12
    server.wait_for_state(pending_id, "terminal")
    slack.wait_for("chat.update")
    rows = _interactions(tmp_path / "clarion.db")
    assert rows == [(pending_id, "answered")]  # Slack's retries: one queued row
    winner = server.respond(pending_id, answer()).json()["error"]["response"]
    assert winner["answers"][0]["selected_options"] == ["mongodb"]
    # A double click (a new trigger) by the same person: 200, a 409 inside, no message to them.
    second = post_interaction(
        server, *signed(click(posted, option_action(posted, "mongodb"), trigger="t2"))
    )
    assert second.status_code == 200
    wait_until(
        lambda: (
            sorted(o or "" for _, o in _interactions(tmp_path / "clarion.db"))
            == ["answered", "conflict"]
        ),
        timeout=60,
        what="the double click settled",
    )
    assert slack.of("chat.postEphemeral") == []
    assert len(slack.of("chat.update")) == 1


def test_a_click_racing_a_web_answer_exactly_one_wins_and_the_loser_is_told(
    tmp_path: Path, slack: FakeSlack, server: ServerProcess
) -> None:
    _, pending_id = _ask(server, slack)
    [posted] = slack.of("chat.postMessage")
    body, headers = signed(click(posted, option_action(posted, "postgres"), user="U0BOB"))
    web: list[httpx.Response] = []
    barrier = threading.Barrier(2)

    def by_web() -> None:
        barrier.wait()
        web.append(server.respond(pending_id, answer(option="sqlite")))

    def by_slack() -> None:
        barrier.wait()
        assert post_interaction(server, body, headers).status_code == 200

    threads = [threading.Thread(target=by_web), threading.Thread(target=by_slack)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [update] = slack.wait_for("chat.update")
    wait_until(
        lambda: all(o is not None for _, o in _interactions(tmp_path / "clarion.db")),
        timeout=60,
        what="the click settled",
    )
    [(_, outcome)] = _interactions(tmp_path / "clarion.db")
    shown = json.dumps(update.args["blocks"])
    if web[0].status_code == 200:
        assert outcome == "conflict"
        [told] = slack.wait_for("chat.postEphemeral")
        assert told.args["user"] == "U0BOB" and "already answered" in told.args["text"]
        assert "Answered in Clarion" in shown and "SQLite" in shown
    else:
        assert web[0].status_code == 409
        assert outcome == "answered"
        assert "Answered by bob" in shown and "PostgreSQL" in shown
    assert len(slack.of("chat.update")) == 1


def test_slack_refusing_a_call_is_a_failed_delivery_retried_without_blocking_webhooks(
    tmp_path: Path, slack: FakeSlack
) -> None:
    with fake_slack() as hook:  # a second loopback server, as the webhook's receiver
        hook_url = f"http://127.0.0.1:{hook.port}/hook"
        extra = f'\n[[webhooks]]\nurl = "{hook_url}"\nsecret = "s"\n'
        server = new_server(tmp_path, slack, extra=extra)
        slack.fail["chat.postMessage"] = "channel_not_found"
        try:
            server.start()
            session_id = server.start_session(server.create_task("Billing"), "/scenario ask")
            server.wait_for_bundle(session_id)
            hook.wait_for("hook")  # the webhook is delivered while Slack refuses
            slack.wait_for("chat.postMessage", count=3)  # retried with backoff
            metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
            assert 'clarion_webhook_attempts_total{result="retry"}' in metrics
            retries = next(
                line
                for line in metrics.splitlines()
                if line.startswith('clarion_webhook_attempts_total{result="retry"}')
            )
            assert float(retries.split()[-1]) >= 2
            del slack.fail["chat.postMessage"]
            slack.wait_for("chat.postMessage", where=lambda c: "blocks" in c.args, count=4)
            assert "channel_not_found" in server.logs()
        finally:
            server.stop()


@pytest.mark.postgres
def test_a_signed_click_answers_on_postgresql_too(
    tmp_path: Path, slack: FakeSlack, new_database_url: object
) -> None:
    url = new_database_url("postgres")  # type: ignore[operator]
    server = new_server(tmp_path, slack, database_url=url)
    try:
        server.start()
        _, pending_id = _ask(server, slack)
        [posted] = slack.of("chat.postMessage")
        assert (
            post_interaction(
                server, *signed(click(posted, option_action(posted, "sqlite")))
            ).status_code
            == 200
        )
        server.wait_for_state(pending_id, "terminal")
        [update] = slack.wait_for("chat.update")
    finally:
        server.stop()
    assert "Answered by alice" in json.dumps(update.args["blocks"])


def test_a_server_killed_after_posting_and_before_recording_posts_again_after_restart(
    tmp_path: Path, slack: FakeSlack
) -> None:
    server = new_server(tmp_path, slack)
    try:
        server.start(failpoints="slack.after_post=crash")
        server.start_session(server.create_task("Billing"), "/scenario ask")
        [first] = slack.wait_for("chat.postMessage")
        assert server.wait_exit(30) == 137  # posted, its place not recorded
        actions = next(b for b in first.args["blocks"] if b["type"] == "actions")
        pending_id = json.loads(actions["elements"][0]["value"])["p"]
        server.start()
        posts = slack.wait_for("chat.postMessage", count=2, where=lambda c: "blocks" in c.args)
        # At least once: the same question again; from now on its second message is the one.
        assert all(pending_id in json.dumps(c.args["blocks"]) for c in posts)
        assert server.respond(pending_id, answer()).status_code in (200, 409)
        [update] = slack.wait_for("chat.update")
    finally:
        server.stop()
    assert update.args["ts"] == "1700000000.000002"
