"""What the bundle read and the inbox show of the waiting policy, on both databases: the
deadlines, who it was escalated to, and who answered; a question with no policy reads `keep`."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from clarion.domain.waiting import OnExpiry
from tests.lifecycle.harness import answer_db
from tests.waiting.rig import ShiftedClock, eventually, policy, waiting_lifecycle

HOUR = 3600.0
FULL = policy(remind="1h", escalate="2h", to=("bob",), expire="8h", on_expiry=OnExpiry.SKIP)


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value)


async def test_a_question_without_a_policy_reads_keep_and_who_answered(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, None, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        read = await life.app.services.reads.bundle(pending_id)
        assert read["remind_at"] is None and read["expires_at"] is None
        assert read["escalated_to"] == [] and read["on_expiry"] == "keep"
        assert read["answered_by"] is None and read["waiting_since"]

        await life.app.services.resolver.respond(pending_id, answer_db())
        await asyncio.wait_for(call, 30)
        assert (await life.app.services.reads.bundle(pending_id))["answered_by"] == "person"


async def test_a_policys_deadlines_escalation_and_answer_are_read(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, FULL, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        read = await life.app.services.reads.bundle(pending_id)
        since = _at(read["waiting_since"])
        assert _at(read["remind_at"]) - since < timedelta(hours=1, seconds=5)
        assert _at(read["expires_at"]) - since < timedelta(hours=8, seconds=5)
        assert read["on_expiry"] == "skip" and read["escalated_to"] == []
        [item] = (await life.app.services.reads.inbox(None))["items"]
        assert item["expires_at"] == read["expires_at"] and item["on_expiry"] == "skip"

        clock.advance(2 * HOUR)

        # The scheduler records the escalation and the next reminder in two transactions:
        # wait for both, not only the first.
        async def escalated_and_reminder_moved() -> bool:
            view = await life.app.services.reads.bundle(pending_id)
            moved = _at(view["remind_at"]) > since + timedelta(hours=2)
            return bool(view["escalated_to"]) and moved

        await eventually(escalated_and_reminder_moved)
        read = await life.app.services.reads.bundle(pending_id)
        assert read["escalated_to"] == ["bob"]
        assert _at(read["remind_at"]) > _at(read["waiting_since"]) + timedelta(hours=2)
        [item] = (await life.app.services.reads.inbox(None))["items"]
        assert item["escalated_to"] == ["bob"]

        clock.advance(6 * HOUR)
        await asyncio.wait_for(call, 30)
        read = await life.app.services.reads.bundle(pending_id)
        assert read["answered_by"] == "policy" and read["remind_at"] is None


async def test_websocket_clients_learn_the_deadlines_and_each_change(store_url: str) -> None:
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, FULL, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)

        def mine(event: object) -> bool:
            return getattr(event, "payload", {}).get("pending_id") == pending_id

        asked = await life.wait_for_event("clarification.waiting.updated", mine, within=30)
        assert asked.payload["expires_at"] and asked.payload["on_expiry"] == "skip"
        assert asked.payload["escalated_to"] == [] and asked.payload["session_id"] == session_id

        clock.advance(2 * HOUR)
        escalated = await life.wait_for_event(
            "clarification.waiting.updated",
            lambda e: mine(e) and e.payload["escalated_to"] == ["bob"],
            within=30,
        )
        assert escalated.payload["answered_by"] is None

        clock.advance(6 * HOUR)
        await asyncio.wait_for(call, 30)
        expired = await life.wait_for_event(
            "clarification.waiting.updated",
            lambda e: mine(e) and e.payload["answered_by"] == "policy",
            within=30,
        )
        assert expired.payload["remind_at"] is None


async def test_the_asked_announcement_shows_what_the_bundle_read_shows(store_url: str) -> None:
    # The announcement is built from the rows the asking transaction wrote, the read from the
    # database: each field the person sees must come out the same.
    clock = ShiftedClock()
    async with waiting_lifecycle(store_url, FULL, clock) as life:
        _, session_id = await life.start_session()
        call, pending_id = await life.ask(session_id)
        asked = await life.wait_for_event(
            "clarification.waiting.updated",
            lambda e: e.payload.get("pending_id") == pending_id,
            within=30,
        )
        read = await life.app.services.reads.bundle(pending_id)
        fields = ("waiting_since", "remind_at", "escalated_to", "expires_at", "on_expiry")
        assert {k: asked.payload[k] for k in fields} == {k: read[k] for k in fields}
        assert asked.payload["remind_at"] and asked.payload["expires_at"]
        assert asked.payload["answered_by"] is None and read["answered_by"] is None
        assert asked.payload["task_id"] == read["task_id"]
        assert asked.payload["session_id"] == session_id

        await life.app.services.resolver.respond(pending_id, answer_db())
        await asyncio.wait_for(call, 30)
