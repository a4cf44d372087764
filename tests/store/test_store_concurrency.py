"""Store contract: two responders racing on two connections; exactly one claim applies."""

from __future__ import annotations

import asyncio

from clarion.domain import lifecycle
from clarion.domain.lifecycle import CLAIM, RESTORE_CLAIM, RETIRE_INTENT
from clarion.domain.models import Answer, ClarificationResponse
from clarion.runtime.clock import ManualClock
from tests.whole_store import open_whole_store

from .conftest import World

ROUNDS = 8


async def test_exactly_one_of_two_concurrent_claims_wins(
    world: World, store_url: str, clock: ManualClock
) -> None:
    session = await world.session()
    await world.turn(session)
    async with open_whole_store(store_url, clock) as a, open_whole_store(store_url, clock) as b:
        for round_no in range(ROUNDS):
            pid = f"race-{round_no}"
            await world.bundle(session, ("q1", "q2"), pending_id=pid)
            answer = ClarificationResponse(
                pid, (Answer("q1", ("x",)), Answer("q2", ("y",))), rejected=False
            )
            reject = ClarificationResponse(pid, (), rejected=True, reject_reason="skip")
            first, second = await asyncio.gather(
                a.claim_response(answer, CLAIM, now=clock.now()),
                b.claim_response(reject, CLAIM, now=clock.now()),
            )
            winners = [r for r in (first, second) if r.claimed]
            assert len(winners) == 1, round_no
            assert len(winners[0].claimed) == 2
            statuses = {
                (await world.store.get_message(m.id)).metadata["status"] for m in winners[0].claimed
            }
            assert statuses == {"answered" if winners[0] is first else "rejected"}


async def test_concurrent_confirm_and_restore_apply_exactly_one(
    world: World, store_url: str, clock: ManualClock
) -> None:
    session = await world.session()
    await world.turn(session)
    async with open_whole_store(store_url, clock) as a, open_whole_store(store_url, clock) as b:
        for round_no in range(ROUNDS):
            pid = f"race-{round_no}"
            await world.bundle(session, ("q1",), pending_id=pid)
            ids = [m.id for m in (await world.answer(pid, "q1")).claimed]
            confirmed, restored = await asyncio.gather(
                a.confirm_delivery(pid, ids, RETIRE_INTENT),
                b.transition_bundle(pid, RESTORE_CLAIM, message_ids=ids),
            )
            assert (confirmed is not None) != bool(restored), round_no
            await world.store.transition_bundle(pid, lifecycle.CANCEL)
