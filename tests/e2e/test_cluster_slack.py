"""Slack in cluster mode: a click that reaches a replica other than the session's owner is
answered by the owner (the live waiter's replica) through the shared durable queue, exactly
once, woken by the bus word of the queued click (the answerer's fallback look is set far
beyond the test's ceilings, so a poll cannot answer it); the question is posted once, and its
message updated once, however many replicas deliver the outbox and see it settle."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.cluster import session_owner, wait_role
from tests.e2e.harness import ServerProcess
from tests.slack.conftest import SLACK_ENV, post_interaction, slack_config
from tests.slack.fake_slack import click, fake_slack, option_action, signed

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


def test_a_click_on_a_non_owner_replica_answers_the_live_question_once(
    tmp_path: Path, replicas: Callable[..., ServerProcess]
) -> None:
    with fake_slack() as slack:
        config = slack_config(tmp_path, slack)
        owner, other = replicas(), replicas()
        for server in (owner, other):
            server.env.update(
                {**SLACK_ENV, "CLARION_CONFIG": str(config), "CLARION_SLACK_POLL_S": "600"}
            )
        owner.start(wait_ready=False)
        owner_id = wait_role(owner, "active")
        other.start(wait_ready=False)
        wait_role(other, "active")

        session_id = owner.start_session(owner.create_task("Billing"), "/scenario ask")
        pending_id = owner.wait_for_bundle(session_id)
        assert session_owner(owner, session_id) == owner_id
        [posted] = slack.wait_for("chat.postMessage")
        response = post_interaction(
            other, *signed(click(posted, option_action(posted, "postgres")))
        )
        assert response.status_code == 200
        bundle = other.wait_for_state(pending_id, "terminal")
        [update] = slack.wait_for("chat.update")
        assert bundle["answered_by"] == "alice"
        # Answered live on the owner: the agent went on in the same turn, no resume prompt.
        assert owner.resume_prompts_seen(session_id) == 0
        top_level = [c for c in slack.of("chat.postMessage") if not c.args.get("thread_ts")]
        assert len(top_level) == 1
        # Both replicas may see it settle (the owner answered it; either may deliver its
        # `clarification.answered` row and look again): whatever each did before it stopped,
        # the message was updated once.
        for server in (other, owner):
            server.stop()
        assert len(slack.of("chat.update")) == 1
    assert "Answered by alice" in json.dumps(update.args["blocks"])
