"""Slack in cluster mode: a click that reaches a replica other than the session's owner is
answered by the owner (the live waiter's replica) through the shared durable queue, exactly
once, woken by the bus word of the queued click (the answerer's fallback look is set far
beyond the test's ceilings, so a poll cannot answer it); the question is posted once, and its
message updated once, however many replicas deliver the outbox and see it settle. When the
owner dies, the replica that adopts its session answers the clicks it left, queued or claimed,
as soon as the session is recovered: not on the fallback look, nor when the dead replica's
claim would have lapsed."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import _pg_connect_kwargs, _run
from tests.e2e.cluster import session_owner, wait_role
from tests.e2e.harness import ServerProcess, wait_until
from tests.slack.conftest import SLACK_ENV, post_interaction, slack_config
from tests.slack.fake_slack import FakeSlack, click, fake_slack, option_action, signed

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


class _Interaction(NamedTuple):
    attempts: int
    next_attempt_at: datetime
    done_at: datetime | None
    outcome: str | None


def _interactions(server: ServerProcess) -> list[_Interaction]:
    """The queued clicks as the shared database holds them."""

    async def read() -> list[_Interaction]:
        import asyncpg

        conn = await asyncpg.connect(**_pg_connect_kwargs(server.database_url))
        try:
            rows = await conn.fetch(
                "SELECT attempts, next_attempt_at, done_at, outcome FROM slack_interactions"
            )
        finally:
            await conn.close()
        return [_Interaction(*row) for row in rows]

    result: list[_Interaction] = _run(read)
    return result


def _owner_and_survivor(
    tmp_path: Path, slack: FakeSlack, replicas: Callable[..., ServerProcess], failpoints: str = ""
) -> tuple[ServerProcess, ServerProcess]:
    """Two replicas whose answerers look for clicks on their own only every 600 s; the first,
    started alone, gets the first session."""
    config = slack_config(tmp_path, slack)
    owner, survivor = replicas(), replicas()
    for server in (owner, survivor):
        server.env.update(
            {**SLACK_ENV, "CLARION_CONFIG": str(config), "CLARION_SLACK_POLL_S": "600"}
        )
    owner.start(failpoints=failpoints, wait_ready=False)
    wait_role(owner, "active")
    survivor.start(wait_ready=False)
    wait_role(survivor, "active")
    return owner, survivor


def _answered_once_by_the_adopter(
    survivor: ServerProcess, slack: FakeSlack, session_id: str, pending_id: str
) -> _Interaction:
    """The click answered by the adopter, once; the message updated once. Returns its row."""
    # Ceilings under the dead replica's lease (300 s) and the fallback look (600 s).
    bundle = survivor.wait_for_state(pending_id, "terminal", timeout=150)
    wait_until(
        lambda: [i.outcome for i in _interactions(survivor)] == ["answered"],
        timeout=60,
        what="the queued click answered",
    )
    wait_until(
        lambda: survivor.resume_prompts_seen(session_id) == 1,
        timeout=60,
        what="the agent resumed on the adopter with the answer",
    )
    [update] = slack.wait_for("chat.update")
    assert survivor.resume_prompts_seen(session_id) == 1
    survivor.stop()  # whatever it did before it stopped, the message was updated once
    assert bundle["answered_by"] == "alice"
    assert len(slack.of("chat.update")) == 1
    assert "Answered by alice" in json.dumps(update.args["blocks"])
    [done] = _interactions(survivor)
    return done


def test_a_click_the_dead_owner_had_claimed_is_answered_by_its_adopter_within_the_lease(
    tmp_path: Path, expiring_replicas: Callable[..., ServerProcess]
) -> None:
    with fake_slack() as slack:
        owner, survivor = _owner_and_survivor(
            tmp_path, slack, expiring_replicas, failpoints="slack.after_ack=crash"
        )
        session_id = owner.start_session(owner.create_task("Billing"), "/scenario ask")
        pending_id = owner.wait_for_bundle(session_id)
        [posted] = slack.wait_for("chat.postMessage")
        response = post_interaction(
            owner, *signed(click(posted, option_action(posted, "postgres")))
        )
        assert response.status_code == 200
        assert owner.wait_exit(60) == 137  # killed with the click claimed, not answered
        [claimed] = _interactions(survivor)
        assert (claimed.attempts, claimed.done_at) == (1, None)

        done = _answered_once_by_the_adopter(survivor, slack, session_id, pending_id)
    assert done.attempts == 2
    # Taken up once the session was adopted, not when the dead replica's claim lapsed.
    assert done.done_at is not None and done.done_at < claimed.next_attempt_at


def test_a_click_queued_for_a_frozen_owner_is_answered_by_its_adopter_at_once(
    tmp_path: Path, expiring_replicas: Callable[..., ServerProcess]
) -> None:
    with fake_slack() as slack:
        owner, survivor = _owner_and_survivor(tmp_path, slack, expiring_replicas)
        session_id = owner.start_session(owner.create_task("Billing"), "/scenario ask")
        pending_id = owner.wait_for_bundle(session_id)
        [posted] = slack.wait_for("chat.postMessage")
        assert owner.proc is not None
        # Frozen, the owner still holds its locks: nobody adopts its session, nobody may
        # answer the click, which the survivor queues and announces to no avail.
        os.kill(owner.proc.pid, signal.SIGSTOP)
        response = post_interaction(
            survivor, *signed(click(posted, option_action(posted, "postgres")))
        )
        assert response.status_code == 200
        [queued] = _interactions(survivor)
        assert (queued.attempts, queued.outcome) == (0, None)
        owner.kill()  # its locks go with its connection: now the survivor adopts

        done = _answered_once_by_the_adopter(survivor, slack, session_id, pending_id)
    assert done.attempts == 1
