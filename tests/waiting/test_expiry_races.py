"""A person's answer racing the expiry (two real callers, on both databases): exactly one
wins, the other gets the usual 409 naming the winner; and a deadline that fell due while the
server was down fires once after the restart."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from clarion.clarification.respond_result import RespondResult
from clarion.domain.errors import NotActive
from clarion.domain.models import MetaKey
from clarion.domain.waiting import OnExpiry
from tests.lifecycle.harness import ASK_DB, Lifecycle, answer_db
from tests.waiting.rig import ShiftedClock, eventually, policy, waiting_lifecycle

HOUR = 3600.0
SKIP_1H = policy(expire="1h", on_expiry=OnExpiry.SKIP)


async def _detached(life: Lifecycle) -> str:
    _, session_id = await life.start_session()
    call, pending_id = await life.ask(session_id, ASK_DB)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    await life.runtime.end_turn(session_id)
    return pending_id


async def test_an_answer_racing_the_expiry_has_exactly_one_winner(store_url: str) -> None:
    clock = ShiftedClock()
    outcomes: set[str] = set()
    async with waiting_lifecycle(store_url, SKIP_1H, clock) as life:
        pending_ids = [await _detached(life) for _ in range(6)]
        clock.advance(HOUR)
        # The person answers every question while the scheduler (woken by the clock, and
        # called here too) expires them.
        results = await asyncio.gather(
            life.app.deadlines.fire_due(None),
            *(life.app.services.resolver.respond(p, answer_db("mongodb")) for p in pending_ids),
            return_exceptions=True,
        )
        for pending_id, person in zip(pending_ids, results[1:], strict=True):

            async def settled(pending_id: str = pending_id) -> bool:
                return await life.state(pending_id) == "terminal"

            await eventually(settled)
            rows = (await life.bundle(pending_id)).rows
            by_policy = rows[0].metadata.get(MetaKey.ANSWERED_BY) == "policy"
            if isinstance(person, RespondResult):
                assert not by_policy and rows[0].metadata["status"] == "answered"
                outcomes.add("person")
            else:
                assert isinstance(person, NotActive), person
                if person.response is None:  # lost while the expiry was being delivered
                    assert person.state == "delivery_claimed"
                else:
                    assert person.response["reject_reason"] == "No answer within 1h"
                assert by_policy and rows[0].metadata["status"] == "rejected"
                outcomes.add("policy")
    assert outcomes  # each question had exactly one winner; which one won is the race's


async def test_a_deadline_due_while_the_server_was_down_fires_once_after_restart(
    store_url: str,
) -> None:
    first = ShiftedClock()
    async with waiting_lifecycle(store_url, SKIP_1H, first) as life:
        pending_id = await _detached(life)
        session_id = (await life.bundle(pending_id)).session.id
    # Down for two hours: the next server's clock starts past the deadline.
    later = ShiftedClock()
    later.offset = first.offset + timedelta(hours=2)
    async with waiting_lifecycle(store_url, SKIP_1H, later) as life:

        async def expired() -> bool:
            return await life.state(pending_id) == "terminal"

        await eventually(expired)
        rows = (await life.bundle(pending_id)).rows
        assert rows[0].metadata[MetaKey.REJECT_REASON] == "No answer within 1h"
        assert await life.app.deadlines.fire_due(None) == 0
        assert session_id
