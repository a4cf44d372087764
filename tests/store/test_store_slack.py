"""Store contract for the Slack channel, on SQLite and PostgreSQL: a Slack row is queued by the
write that caused its event, with what the message is built from; where a message is gets
recorded once; the interaction queue takes one row per dedupe key however many retries race,
is claimed and finished by guarded updates, and survives in the database between processes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import timedelta

from clarion.domain.notification_events import CLARIFICATION_REQUESTED, EVENTS
from clarion.domain.slack import SlackInteraction, SlackMessage, SlackTarget
from clarion.store.outbox import Outbox
from tests.whole_store import WholeStore

from .conftest import World


def _slack(store: WholeStore, events: frozenset[str] = frozenset(EVENTS)) -> None:
    store.configure_outbox(
        Outbox(
            base_url=lambda: "http://clarion.test",
            slack_for=lambda workspace: (
                SlackTarget("slack:default", events) if workspace == "default" else None
            ),
            slack_events=events,
        )
    )


def _interaction(key: str, pending_id: str = "p1", user: str = "U1") -> SlackInteraction:
    return SlackInteraction(
        id=key,
        pending_id=pending_id,
        slack_user=user,
        user="alice",
        channel="C1",
        message_ts="1.1",
        body=json.dumps({"rejected": True}),
    )


async def test_a_new_bundle_queues_one_slack_row_in_its_own_transaction(world: World) -> None:
    _slack(world.store, frozenset({CLARIFICATION_REQUESTED}))
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("db", "lang"))
    [delivery] = await world.store.list_deliveries()
    assert (delivery.url, delivery.event) == ("slack:default", CLARIFICATION_REQUESTED)
    body = json.loads(delivery.body)
    assert body["pending_id"] == rows[0].metadata["pending_id"]
    assert [q["id"] for q in body["questions"]] == ["db", "lang"]
    assert body["task"] == {"id": session.task_id, "title": "t"}
    assert body["link"].startswith("http://clarion.test/#/tasks/")


async def test_a_workspace_without_slack_queues_nothing(world: World) -> None:
    _slack(world.store)
    workspace = await world.store.ensure_workspace("other")
    task = await world.store.create_task(title="x", description="", workspace_id=workspace.id)
    session = await world.session(task_id=task.id)
    await world.turn(session)
    await world.bundle(session)
    assert await world.store.list_deliveries() == []


async def test_a_message_is_recorded_once_and_closed_once(world: World) -> None:
    slack = world.store.stores.slack
    first = SlackMessage("p1", "slack:default", "C1", "1.1", "t", "s", world.clock.now(), "{}")
    assert await slack.record_slack_message(first)
    assert not await slack.record_slack_message(dataclasses.replace(first, ts="2.2"))
    found = await slack.find_slack_message("p1")
    assert found is not None and found.ts == "1.1" and found.closed_at is None
    assert [m.pending_id for m in await slack.open_slack_messages(None, 10)] == ["p1"]
    assert await slack.close_slack_message("p1", "Answered by alice")
    assert not await slack.close_slack_message("p1", "Answered by bob")
    assert await slack.open_slack_messages(None, 10) == []


async def test_racing_retries_of_one_interaction_queue_exactly_one_row(world: World) -> None:
    slack = world.store.stores.slack
    results = await asyncio.gather(
        *(slack.queue_slack_interaction(_interaction("k1")) for _ in range(12))
    )
    assert results.count(True) == 1
    assert [i.id for i in await slack.slack_interactions_of("p1")] == ["k1"]


async def test_an_interaction_is_claimed_by_one_worker_and_finished_once(world: World) -> None:
    slack = world.store.stores.slack
    await slack.queue_slack_interaction(_interaction("k1"))
    now = world.clock.now()
    [due] = await slack.due_slack_interactions(None, now, 10)
    lease = now + timedelta(seconds=60)
    claims = await asyncio.gather(
        *(
            slack.claim_slack_interaction(
                "k1", attempts_before=due.attempts, now=now, lease_until=lease
            )
            for _ in range(5)
        )
    )
    assert claims.count(True) == 1
    assert await slack.due_slack_interactions(None, now, 10) == []  # leased
    # A lease that lapsed (its worker died) makes it due again, one attempt counted.
    [again] = await slack.due_slack_interactions(None, lease, 10)
    assert again.attempts == 1
    assert await slack.finish_slack_interaction("k1", outcome="answered")
    assert not await slack.finish_slack_interaction("k1", outcome="conflict")
    [done] = await slack.slack_interactions_of("p1")
    assert done.outcome == "answered" and done.done_at is not None
    assert await slack.due_slack_interactions(None, lease, 10) == []


async def test_a_failed_answer_goes_back_in_the_queue_for_later(world: World) -> None:
    slack = world.store.stores.slack
    await slack.queue_slack_interaction(_interaction("k1"))
    now = world.clock.now()
    later = now + timedelta(seconds=5)
    assert await slack.retry_slack_interaction("k1", next_attempt_at=later, error="db down")
    assert await slack.due_slack_interactions(None, now, 10) == []
    assert [i.id for i in await slack.due_slack_interactions(None, later, 10)] == ["k1"]


async def test_a_users_workspaces_are_read_and_an_unknown_user_is_none(world: World) -> None:
    slack = world.store.stores.slack
    await world.store.issue_api_token(user="alice", workspace="ops", token_hash="a" * 64)
    workspaces = await slack.user_workspaces("alice")
    assert workspaces is not None and [w.name for w in workspaces] == ["ops"]
    assert await slack.user_workspaces("nobody") is None


async def test_in_a_cluster_a_replica_sees_the_interactions_and_messages_of_its_own_sessions(
    world: World,
) -> None:
    slack = world.store.stores.slack
    pending: dict[str, str] = {}
    for replica in ("r1", "r2"):
        session = await world.session()
        await world.own(session.id, replica)
        await world.turn(session)
        [row] = await world.bundle(session)
        pending[replica] = str(row.metadata["pending_id"])
        await slack.queue_slack_interaction(_interaction(f"k-{replica}", pending[replica]))
        await slack.record_slack_message(
            SlackMessage(
                pending[replica],
                "slack:default",
                "C",
                replica,
                session.task_id,
                session.id,
                world.clock.now(),
                "{}",
            )
        )
    now = world.clock.now()
    assert [i.pending_id for i in await slack.due_slack_interactions("r1", now, 10)] == [
        pending["r1"]
    ]
    assert len(await slack.due_slack_interactions(None, now, 10)) == 2
    assert [m.ts for m in await slack.open_slack_messages("r2", 10)] == ["r2"]
    # Claims are released only for the replica's own sessions.
    later = now + timedelta(seconds=60)
    for replica in ("r1", "r2"):
        assert await slack.claim_slack_interaction(
            f"k-{replica}", attempts_before=0, now=now, lease_until=later
        )
    assert await slack.release_slack_claims("r1", now) == 1
    assert [i.id for i in await slack.due_slack_interactions(None, now, 10)] == ["k-r1"]


async def test_releasing_the_claims_of_adopted_sessions_frees_theirs_and_keeps_the_others(
    world: World,
) -> None:
    slack = world.store.stores.slack
    sessions: list[str] = []
    for key in ("adopted", "adopted-too", "kept"):
        session = await world.session()
        await world.turn(session)
        [row] = await world.bundle(session)
        sessions.append(session.id)
        await slack.queue_slack_interaction(_interaction(key, str(row.metadata["pending_id"])))
    now = world.clock.now()
    lease = now + timedelta(seconds=300)
    for key in ("adopted", "kept"):  # claimed by a replica that then died
        assert await slack.claim_slack_interaction(
            key, attempts_before=0, now=now, lease_until=lease
        )
    assert await slack.release_slack_claims_of_sessions(sessions[:2], now) == 1
    due = await slack.due_slack_interactions(None, now, 10)
    assert sorted(i.id for i in due) == ["adopted", "adopted-too"]
    # A release of no session touches nothing; a finished click is never released.
    assert await slack.release_slack_claims_of_sessions([], now) == 0
    assert await slack.claim_slack_interaction(
        "adopted", attempts_before=1, now=now, lease_until=lease
    )
    assert await slack.finish_slack_interaction("adopted", outcome="answered")
    assert await slack.release_slack_claims_of_sessions(sessions, now) == 1  # only "kept"
    due = await slack.due_slack_interactions(None, now, 10)
    assert sorted(i.id for i in due) == ["adopted-too", "kept"]
