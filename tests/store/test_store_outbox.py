"""Store contract for the notification outbox, on SQLite and PostgreSQL: each event's delivery is
written by the write that caused it (and only when it applied), a failed write queues nothing,
nothing is queued without a channel, attempts are recorded by guarded updates, and migration 5
adds the table to an existing database."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, insert, inspect

from clarion.domain import lifecycle
from clarion.domain.emails import MailTarget
from clarion.domain.errors import Conflict
from clarion.domain.models import AuthorType, MessageType, SessionState
from clarion.domain.notification_events import EVENTS
from clarion.domain.permissions import (
    PermissionOption,
    PermissionStatus,
    ToolCallInfo,
    request_metadata,
)
from clarion.ports import NewMessage
from clarion.runtime.clock import ManualClock
from clarion.store.db.engine import open_engine
from clarion.store.db.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version
from clarion.store.outbox import Outbox
from tests.whole_store import WholeStore, open_whole_store

from .conftest import World

ALL = frozenset(EVENTS)
HOOK = "http://127.0.0.1:9/hook"


def _listen(store: WholeStore, events: frozenset[str] = ALL) -> list[int]:
    woken: list[int] = []
    store.configure_outbox(
        Outbox(
            hooks=((HOOK, events),),
            base_url=lambda: "http://clarion.test",
            wake=lambda: woken.append(1),
        )
    )
    return woken


async def _bodies(store: WholeStore) -> list[dict[str, Any]]:
    return [json.loads(d.body) for d in await store.list_deliveries()]


async def test_nothing_is_queued_without_a_channel(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session)
    assert await world.store.list_deliveries() == []


async def test_a_new_bundle_queues_one_requested_delivery_in_its_own_write(world: World) -> None:
    woken = _listen(world.store)
    session = await world.session()
    await world.turn(session)

    rows = await world.bundle(session, ("db", "orm"))

    [queued] = await world.store.list_deliveries()
    body = json.loads(queued.body)
    assert queued.event == "clarification.requested" and queued.url == HOOK
    assert queued.attempts == 0 and queued.delivered_at is None
    assert body["delivery_id"] == queued.id
    assert body["pending_id"] == rows[0].metadata["pending_id"]
    assert body["task"] == {"id": session.task_id, "title": "t"}
    assert body["session_id"] == session.id
    assert [q["id"] for q in body["questions"]] == ["db", "orm"]
    assert body["link"] == f"http://clarion.test/#/tasks/{session.task_id}/sessions/{session.id}"
    assert body["text"].startswith("Agent asks in t: question db?")
    assert woken == [1]  # woken once, after the commit


async def test_a_refused_write_queues_nothing(world: World) -> None:
    _listen(world.store)
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session)
    pending_id = str(rows[0].metadata["pending_id"])
    with pytest.raises(Conflict):
        await world.bundle(session, pending_id=pending_id)
    assert len(await world.store.list_deliveries()) == 1


async def test_only_the_events_a_webhook_asked_for_are_queued(world: World) -> None:
    _listen(world.store, frozenset({"clarification.answered"}))
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session)
    pending_id = str(rows[0].metadata["pending_id"])

    await world.answer(pending_id, "db")
    stale = await world.answer(pending_id, "db")  # lost: claims nothing, queues nothing

    assert stale.claimed == ()
    assert [d.event for d in await world.store.list_deliveries()] == ["clarification.answered"]


async def test_detaching_queues_one_delivery_per_bundle_once(world: World) -> None:
    _listen(world.store, frozenset({"clarification.detached"}))
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a", "b"))

    await world.store.transition_session_bundles(session.id, lifecycle.DETACH)
    await world.store.transition_session_bundles(
        session.id, lifecycle.DETACH
    )  # nothing left to detach

    [body] = await _bodies(world.store)
    assert body["event"] == "clarification.detached"
    assert [q["id"] for q in body["questions"]] == ["a", "b"]


async def test_startup_detach_queues_a_delivery_per_bundle(world: World) -> None:
    _listen(world.store, frozenset({"clarification.detached"}))
    for _ in range(2):
        session = await world.session()
        await world.turn(session)
        await world.bundle(session)

    await world.store.transition_all_bundles(lifecycle.DETACH)

    assert len(await _bodies(world.store)) == 2


async def test_startup_detach_queues_no_email_the_question_stays_answerable_by_its_link(
    world: World,
) -> None:
    detached = frozenset({"clarification.detached"})
    mail = MailTarget(
        key="email:test", events=detached, sender="clarion@example.com", to=("a@example.com",)
    )
    world.store.configure_outbox(Outbox(mail_for=lambda workspace: mail, mail_events=detached))
    session = await world.session()
    await world.turn(session)
    await world.bundle(session)

    [changed] = await world.store.transition_all_bundles(lifecycle.DETACH)

    assert changed.pending_id
    assert await world.store.list_deliveries() == []


async def test_permission_requests_and_decisions_and_failures_queue_their_events(
    world: World,
) -> None:
    _listen(world.store)
    session = await world.session()
    await world.turn(session)
    options = (PermissionOption("allow", "Allow", "allow_once"),)
    written = await world.store.add_permission_request(
        NewMessage(
            session_id=session.id,
            author_type=AuthorType.AGENT,
            type=MessageType.PERMISSION_REQUEST,
            content="Edit README.md",
            metadata=request_metadata(ToolCallInfo("c1", "Edit README.md", "edit"), options),
        )
    )
    message_id = written.rows[0].id
    await world.store.decide_permission(
        message_id, status=PermissionStatus.APPROVED, decision={"option_id": "allow"}
    )
    await world.store.record_agent_failure(
        NewMessage(
            session_id=session.id,
            author_type=AuthorType.SYSTEM,
            type=MessageType.ERROR,
            content="boom",
        ),
        error="Agent exited with code 7.",
        session_state=SessionState.FAILED,
    )

    requested, decided, failed = await _bodies(world.store)
    assert requested["event"] == "permission.requested"
    assert requested["message_id"] == message_id
    assert requested["tool_call"]["title"] == "Edit README.md"
    assert requested["text"].startswith("Agent asks permission in t: Edit README.md")
    assert decided["event"] == "permission.decided" and decided["message_id"] == message_id
    assert failed["event"] == "session.failed"
    assert failed["text"].startswith("Session failed in t: Agent exited with code 7.")


async def test_attempts_are_recorded_by_guarded_updates(world: World) -> None:
    _listen(world.store)
    session = await world.session()
    await world.turn(session)
    await world.bundle(session)
    now = world.clock.now()
    [due] = await world.store.due_deliveries(now, 10)

    later = now + timedelta(seconds=30)
    retried = await world.store.record_delivery_attempt(
        due.id, attempts_before=0, delivered=False, next_attempt_at=later, error="HTTP 500"
    )
    stale = await world.store.record_delivery_attempt(due.id, attempts_before=0, delivered=True)

    assert retried and not stale
    assert await world.store.due_deliveries(now, 10) == []
    assert await world.store.next_delivery_at() == later
    assert [d.id for d in await world.store.due_deliveries(later, 10)] == [due.id]
    assert await world.store.record_delivery_attempt(due.id, attempts_before=1, delivered=True)
    [done] = await world.store.list_deliveries()
    assert done.attempts == 2 and done.delivered_at is not None and done.last_error is None
    assert await world.store.next_delivery_at() is None
    assert not await world.store.record_delivery_attempt(due.id, attempts_before=2, delivered=True)


async def test_only_one_of_two_concurrent_claims_takes_a_delivery_until_its_lease_passes(
    world: World,
) -> None:
    _listen(world.store)
    session = await world.session()
    await world.turn(session)
    await world.bundle(session)
    now = world.clock.now()
    [due] = await world.store.due_deliveries(now, 10)
    lease = now + timedelta(seconds=11)

    won = await asyncio.gather(
        *(
            world.store.claim_delivery(due.id, attempts_before=0, now=now, lease_until=lease)
            for _ in range(2)
        )
    )

    assert sorted(won) == [False, True]
    assert await world.store.due_deliveries(now, 10) == []
    # The claimer died: after the lease the delivery is due again, attempts unchanged.
    [again] = await world.store.due_deliveries(lease, 10)
    assert again.id == due.id and again.attempts == 0


async def test_migration_five_adds_the_outbox_to_a_version_four_database_with_rows(
    db_url: str, clock: ManualClock
) -> None:
    engine = open_engine(db_url)
    try:

        def version_four(conn: Connection) -> None:
            schema_version.create(conn)
            for version in range(1, 5):
                MIGRATIONS[version - 1](conn)
                conn.execute(
                    insert(schema_version).values(version=version, applied_at=datetime.now(UTC))
                )

        def tables(conn: Connection) -> set[str]:
            return set(inspect(conn).get_table_names())

        async with engine.begin() as conn:
            await conn.run_sync(version_four)
            assert "webhook_deliveries" not in await conn.run_sync(tables)
    finally:
        await engine.dispose()
    # An existing database with work in it, opened by this version: migrated, then queueing.
    async with open_whole_store(db_url, clock) as store:
        world = World(store, clock)
        _listen(store)
        session = await world.session()
        await world.turn(session)
        await world.bundle(session)
        assert [d.event for d in await store.list_deliveries()] == ["clarification.requested"]
    engine = open_engine(db_url)
    try:
        assert await migrate(engine) == LATEST_VERSION
    finally:
        await engine.dispose()
