"""A question's closing `chat.update` is sent once across replicas, on SQLite and PostgreSQL:
the closer claims the message with a lease (a guarded update in the shared database) before
the call. Raced here on two stores over one database, as two replicas would: exactly one
claim applies; a claim held mid-update keeps the other closer from sending; a failed update
gives the claim back; a claimer that died leaves a lease that lapses."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, cast

import pytest
from sqlalchemy import inspect, text

from clarion.domain import lifecycle
from clarion.domain.slack import SlackMessage
from clarion.runtime.clock import ManualClock
from clarion.slack.client import SlackApi
from clarion.slack.closer import CLOSE_LEASE_S, SlackCloser
from clarion.store import open_engine
from clarion.store.db.migrations import MIGRATIONS, _v13_slack_close_lease, migrate
from tests.whole_store import WholeStore, open_whole_store

from .conftest import World

ROUNDS = 8
KEY = "slack:default"


class RecordingSlack:
    """Stands in for the Web API client: records each `chat.update`; while `gate` is set,
    the first update waits on it (a call in flight)."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.entered = asyncio.Event()
        self.gate: asyncio.Event | None = None
        self.fail = False

    async def update(
        self, channel: str, ts: str, text: str, blocks: Sequence[Mapping[str, Any]]
    ) -> None:
        self.updates.append(ts)
        self.entered.set()
        if self.gate is not None and len(self.updates) == 1:
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("Slack is away")


def _closer(store: WholeStore, slack: RecordingSlack, clock: ManualClock) -> SlackCloser:
    apis = cast(Mapping[str, SlackApi], {KEY: slack})
    return SlackCloser(store.stores.slack, store, apis, clock, sweep_s=60.0)


async def _settled_message(world: World, pending_id: str) -> None:
    """A posted question that was cancelled: its message is due its closing update."""
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, pending_id=pending_id)
    await world.store.transition_bundle(pending_id, lifecycle.CANCEL)
    await world.store.stores.slack.record_slack_message(
        SlackMessage(
            pending_id, KEY, "C1", f"ts-{pending_id}", session.task_id, session.id,
            world.clock.now(), "{}",
        )
    )  # fmt: skip


async def test_of_two_replicas_racing_to_close_a_message_exactly_one_sends_the_update(
    world: World, store_url: str, clock: ManualClock
) -> None:
    slack = RecordingSlack()
    async with open_whole_store(store_url, clock) as a, open_whole_store(store_url, clock) as b:
        one, other = _closer(a, slack, clock), _closer(b, slack, clock)
        for round_no in range(ROUNDS):
            pid = f"race-{round_no}"
            await _settled_message(world, pid)
            results = await asyncio.gather(one.close(pid), other.close(pid))
            assert results.count(True) == 1, round_no
            assert slack.updates.count(f"ts-{pid}") == 1, round_no
    found = await world.store.stores.slack.open_slack_messages(None, 100)
    assert found == []


async def test_a_claim_held_through_a_slow_update_keeps_the_other_replica_from_sending(
    world: World, store_url: str, clock: ManualClock
) -> None:
    slack = RecordingSlack()
    slack.gate = asyncio.Event()
    await _settled_message(world, "p1")
    async with open_whole_store(store_url, clock) as a, open_whole_store(store_url, clock) as b:
        first = asyncio.create_task(_closer(a, slack, clock).close("p1"))
        await asyncio.wait_for(slack.entered.wait(), 30)  # its update is in flight
        assert not await _closer(b, slack, clock).close("p1")
        assert not await _closer(b, slack, clock).sweep()
        slack.gate.set()
        assert await asyncio.wait_for(first, 30)
    assert slack.updates == ["ts-p1"]


async def test_a_failed_update_gives_its_claim_back_so_the_next_look_sends_it(
    world: World, store_url: str, clock: ManualClock
) -> None:
    slack = RecordingSlack()
    slack.fail = True
    await _settled_message(world, "p1")
    async with open_whole_store(store_url, clock) as a, open_whole_store(store_url, clock) as b:
        with pytest.raises(RuntimeError):
            await _closer(a, slack, clock).close("p1")
        slack.fail = False
        assert await _closer(b, slack, clock).close("p1")  # at once: no lease to wait out
    assert slack.updates == ["ts-p1", "ts-p1"]


async def test_a_claim_whose_holder_died_lapses_at_its_lease_and_closed_is_final(
    world: World,
) -> None:
    records = world.store.stores.slack
    await _settled_message(world, "p1")
    now = world.clock.now()
    lease = now + timedelta(seconds=CLOSE_LEASE_S)
    claims = await asyncio.gather(
        *(records.claim_slack_close("p1", now=now, lease_until=lease) for _ in range(5))
    )
    assert claims.count(True) == 1
    # The holder is gone without a word: nobody else may send until its lease has passed.
    almost = lease - timedelta(seconds=1)
    assert not await records.claim_slack_close("p1", now=almost, lease_until=almost + (lease - now))
    later = lease + timedelta(seconds=CLOSE_LEASE_S)
    assert await records.claim_slack_close("p1", now=lease, lease_until=later)
    assert not await records.release_slack_close("p1", lease_until=lease)  # not its claim now
    assert await records.close_slack_message("p1", "Closed")
    assert not await records.claim_slack_close("p1", now=later, lease_until=later + (lease - now))


async def test_the_lease_migration_adds_the_column_a_database_of_the_version_before_lacks(
    db_url: str, clock: ManualClock
) -> None:
    engine = open_engine(db_url)
    try:
        await migrate(engine, upto=MIGRATIONS.index(_v13_slack_close_lease))
        async with engine.begin() as conn:
            await conn.execute(text("ALTER TABLE slack_messages DROP COLUMN close_lease_until"))
        await migrate(engine)
        async with engine.connect() as conn:
            names = await conn.run_sync(
                lambda sync: {c["name"] for c in inspect(sync).get_columns("slack_messages")}
            )
        assert "close_lease_until" in names
    finally:
        await engine.dispose()
    async with open_whole_store(db_url, clock) as store:
        world = World(store, clock)
        await _settled_message(world, "p1")
        slack = RecordingSlack()
        assert await _closer(store, slack, clock).close("p1")
        assert slack.updates == ["ts-p1"]
