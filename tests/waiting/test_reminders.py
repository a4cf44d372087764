"""Reminders and escalation on a manual clock, on both databases: a reminder repeats every
`remind_after` while nobody answers and stops once someone does; an escalation fires once; each
is a signed webhook delivery queued in the commit that fired it, as is the expiry."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clarion.config.webhooks import Webhook
from clarion.domain.waiting import OnExpiry
from clarion.domain.webhooks import SIGNATURE_HEADER, signature
from tests.lifecycle.harness import Lifecycle, answer_db
from tests.lifecycle.test_webhook_delivery import Receiver, receiving
from tests.waiting.rig import (
    REAL_TIME_MARGIN_S,
    ShiftedClock,
    eventually,
    policy,
    waiting_lifecycle,
)

HOUR = 3600.0
SECRET = "k"
WAITING_EVENTS = ("clarification.reminder", "clarification.escalated", "clarification.expired")


async def _events(life: Lifecycle, pending_id: str) -> list[str]:
    rows = await life.app.stores.probes.list_deliveries()
    bodies = [json.loads(row.body) for row in rows]
    return [b["event"] for b in bodies if b.get("pending_id") == pending_id]


async def _waiting_events(life: Lifecycle, pending_id: str) -> list[str]:
    return [e for e in await _events(life, pending_id) if e in WAITING_EVENTS]


async def _count(life: Lifecycle, pending_id: str, count: int) -> list[str]:
    async def reached() -> bool:
        return len(await _waiting_events(life, pending_id)) >= count

    await eventually(reached)
    return await _waiting_events(life, pending_id)


async def test_a_reminder_repeats_while_nobody_answers_and_stops_after(store_url: str) -> None:
    clock = ShiftedClock()
    hook = (Webhook("http://127.0.0.1:9/hook", SECRET),)
    async with waiting_lifecycle(store_url, policy(remind="1h"), clock, webhooks=hook) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)

        clock.advance(HOUR - REAL_TIME_MARGIN_S)
        await life.app.deadlines.fire_due(None)
        assert await _waiting_events(life, pending_id) == []
        for n in (1, 2, 3):
            clock.advance(HOUR if n > 1 else REAL_TIME_MARGIN_S)
            assert await _count(life, pending_id, n) == ["clarification.reminder"] * n

        await life.app.services.resolver.respond(pending_id, answer_db())
        await asyncio.wait_for(call, 30)
        clock.advance(5 * HOUR)
        await life.app.deadlines.fire_due(None)
        assert await _waiting_events(life, pending_id) == ["clarification.reminder"] * 3
        record = (await life.store.find_deadlines([pending_id]))[pending_id]
        assert record.reminders == 3 and record.next_due_at is None


async def test_an_escalation_fires_once_and_names_who_was_asked(store_url: str) -> None:
    clock = ShiftedClock()
    hook = (Webhook("http://127.0.0.1:9/hook", SECRET),)
    escalate = policy(escalate="2h", to=("bob", "carol"))
    async with waiting_lifecycle(store_url, escalate, clock, webhooks=hook) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)

        clock.advance(2 * HOUR)
        assert await _count(life, pending_id, 1) == ["clarification.escalated"]
        clock.advance(10 * HOUR)
        assert await life.app.deadlines.fire_due(None) == 0

        assert await life.store.escalated_users(pending_id) == ("bob", "carol")
        assert await _waiting_events(life, pending_id) == ["clarification.escalated"]
        call.cancel()


async def test_escalation_is_nobodys_before_it_fires(store_url: str) -> None:
    clock = ShiftedClock()
    escalate = policy(escalate="2h", to=("bob",))
    async with waiting_lifecycle(store_url, escalate, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        assert await life.store.escalated_users(pending_id) == ()
        call.cancel()


async def test_waiting_events_are_signed_and_readable_in_a_chat(store_url: str) -> None:
    clock = ShiftedClock()
    receiver = Receiver()

    full = policy(remind="1h", escalate="2h", to=("bob",), expire="3h", on_expiry=OnExpiry.SKIP)
    async with receiving(receiver):
        hooks = (Webhook(receiver.url, SECRET),)
        async with waiting_lifecycle(store_url, full, clock, webhooks=hooks) as life:
            _, session_id = await life.start_session()
            call, pending_id = await life.ask(session_id)
            for _ in range(3):
                clock.advance(HOUR)
                await life.app.deadlines.fire_due(None)
            await asyncio.wait_for(call, 30)
            await receiver.wait_for(5)  # requested, reminder x2, escalated, expired
            bodies: list[dict[str, Any]] = []
            for headers, raw in receiver.requests:
                assert headers[SIGNATURE_HEADER] == signature(SECRET, raw)
                bodies.append(json.loads(raw))
    mine = {b["event"]: b for b in bodies if b.get("pending_id") == pending_id}
    assert set(WAITING_EVENTS) <= set(mine)
    assert mine["clarification.reminder"]["text"].startswith("Still waiting for an answer in")
    assert "bob" in mine["clarification.escalated"]["text"]
    assert "No answer within 3h" in mine["clarification.expired"]["text"]
    assert all(mine[e]["questions"][0]["id"] == "db" for e in WAITING_EVENTS)
