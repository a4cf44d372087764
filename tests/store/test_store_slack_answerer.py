"""The Slack answerer wakes when there is work, on SQLite and PostgreSQL: a click whose answer
failed before any outcome is tried again when its backoff is due, not on the fallback look
(set here far beyond the test's ceiling), and a wake answers a newly queued click at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import cast

from clarion.domain.slack import SlackInteraction
from clarion.runtime.clock import ManualClock, SystemClock
from clarion.slack.answerer import SlackAnswerer
from clarion.slack.client import SlackApi
from clarion.slack.closer import SlackCloser

from .conftest import World

CEILING_S = 30.0
NEVER_S = 600.0  # the fallback look: no test here may depend on it


class FlakyRespond:
    """The respond path: fails its first call (the database away), then answers."""

    def __init__(self, failures: int) -> None:
        self.calls: list[str] = []
        self.failures = failures
        self.answered = asyncio.Event()
        self.passes: list[int] = []  # how many due clicks each of the answerer's passes took
        self.pass_over = asyncio.Event()

    async def __call__(
        self, pending_id: str, body: object, *, answered_by: str | None = None
    ) -> object:
        self.calls.append(pending_id)
        if len(self.calls) <= self.failures:
            raise RuntimeError("database away")
        self.answered.set()
        return None


def _click(key: str, pending_id: str) -> SlackInteraction:
    return SlackInteraction(
        id=key,
        pending_id=pending_id,
        slack_user="U1",
        user="alice",
        channel=None,
        message_ts=None,
        body=json.dumps({"rejected": True}),
    )


def _answerer(world: World, respond: FlakyRespond, owner: str | None = None) -> SlackAnswerer:
    records = world.store.stores.slack
    apis = cast(Mapping[str, SlackApi], {})
    closer = SlackCloser(records, world.store, apis, world.clock, sweep_s=NEVER_S)

    async def no_api(pending_id: str) -> SlackApi | None:
        return None

    # Real time for the answerer: its backoff is waited out on the event loop.
    answerer = SlackAnswerer(
        records, respond, closer, no_api, SystemClock(), poll_s=NEVER_S, owner=lambda: owner
    )
    answer_due = answerer.answer_due

    async def noted() -> int:
        """A pass, noted once it is over (its outcomes recorded)."""
        found = await answer_due()
        respond.passes.append(found)
        respond.pass_over.set()
        return found

    answerer.answer_due = noted  # type: ignore[method-assign]
    return answerer


async def _until(respond: FlakyRespond, answered: bool) -> None:
    """Until a pass is over (one that answered, if `answered`), then the answerer sleeps."""
    async with asyncio.timeout(CEILING_S):
        while True:
            await respond.pass_over.wait()
            respond.pass_over.clear()
            if not answered or respond.answered.is_set():
                return


async def _session_bundle(world: World) -> str:
    session = await world.session()
    await world.turn(session)
    [row] = await world.bundle(session)
    return str(row.metadata["pending_id"])


async def test_a_failed_answer_is_tried_again_when_its_backoff_is_due(
    world: World, clock: ManualClock
) -> None:
    pending_id = await _session_bundle(world)
    await world.store.stores.slack.queue_slack_interaction(_click("k1", pending_id))
    respond = FlakyRespond(failures=1)
    runner = asyncio.create_task(_answerer(world, respond).run())
    try:
        await _until(respond, answered=True)
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert respond.calls == [pending_id, pending_id]
    [done] = await world.store.stores.slack.slack_interactions_of(pending_id)
    assert done.outcome == "answered" and done.attempts == 2


async def test_a_wake_answers_a_click_queued_after_the_answerer_went_to_sleep(
    world: World,
) -> None:
    pending_id = await _session_bundle(world)
    respond = FlakyRespond(failures=0)
    answerer = _answerer(world, respond)
    runner = asyncio.create_task(answerer.run())
    try:
        await _until(respond, answered=False)  # found nothing; now it sleeps
        await world.store.stores.slack.queue_slack_interaction(_click("k1", pending_id))
        answerer.wake()
        await _until(respond, answered=True)
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert respond.calls == [pending_id] and respond.passes == [0, 1]
    [done] = await world.store.stores.slack.slack_interactions_of(pending_id)
    assert done.outcome == "answered"


async def test_a_click_a_dead_replica_claimed_is_answered_once_its_session_is_taken_up(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    [row] = await world.bundle(session)
    pending_id = str(row.metadata["pending_id"])
    records = world.store.stores.slack
    await world.own(session.id, "dead")
    await records.queue_slack_interaction(_click("k1", pending_id))
    now = SystemClock().now()
    assert await records.claim_slack_interaction(  # the dead replica's, for five minutes
        "k1", attempts_before=0, now=now, lease_until=now + timedelta(seconds=300)
    )
    respond = FlakyRespond(failures=0)
    answerer = _answerer(world, respond, owner="me")
    runner = asyncio.create_task(answerer.run())
    try:
        await _until(respond, answered=False)  # not its session yet; now it sleeps
        await world.own(session.id, "me")  # the adoption
        assert await answerer.take_up([session.id]) == 1
        await _until(respond, answered=True)
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert respond.calls == [pending_id] and respond.passes == [0, 1]
    [done] = await records.slack_interactions_of(pending_id)
    assert done.outcome == "answered" and done.attempts == 2
