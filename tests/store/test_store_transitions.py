"""The store applies the transitions of domain/lifecycle.py: a guarded call writes exactly its
transition's change on the rows its guard selects, and refuses a transition it does not
implement. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from clarion.domain import lifecycle
from clarion.domain.lifecycle import CLAIMED, RESTORE_CLAIM
from clarion.domain.models import Message
from clarion.store import SqlStore

from .conftest import World


def _lifecycle_part(message: Message) -> dict[str, object]:
    return {k: v for k, v in message.metadata.items() if k in lifecycle.LIFECYCLE_KEYS}


async def test_settling_a_claim_writes_exactly_the_named_transitions_change(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a", "b"), pending_id="p")
    claim = await world.answer("p", "a", "b")
    ids = [m.id for m in claim.claimed]
    written = await world.store.confirm_delivery("p", ids, lifecycle.DELIVER)
    assert written is not None
    for before, after in zip(claim.claimed, written.rows, strict=True):
        assert after.metadata == lifecycle.DELIVER.change(before.metadata)
        assert after.updated_at == before.updated_at  # DELIVER keeps the claim time


async def test_a_claim_retired_without_delivery_records_none(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    claim = await world.answer("p", "a")
    written = await world.store.confirm_delivery(
        "p", [m.id for m in claim.claimed], lifecycle.RETIRE_INTENT
    )
    assert written is not None
    [row] = written.rows
    assert "delivery" not in row.metadata
    assert row.metadata == lifecycle.RETIRE_INTENT.change(claim.claimed[0].metadata)


@pytest.mark.parametrize(
    "transition", [lifecycle.CANCEL, lifecycle.RESTORE_CLAIM, lifecycle.DISPATCH_UNKNOWN], ids=str
)
async def test_settling_a_claim_refuses_a_transition_that_does_not_settle_one(
    world: World, transition: lifecycle.Transition
) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    claim = await world.answer("p", "a")
    ids = [m.id for m in claim.claimed]
    with pytest.raises(ValueError, match="does not settle a claim"):
        await world.store.confirm_delivery("p", ids, transition)
    [still] = (await world.store.find_bundle("p") or pytest.fail("bundle gone")).rows
    assert _lifecycle_part(still) == _lifecycle_part(claim.claimed[0])


async def test_detach_cancel_and_restore_write_their_transitions_change(
    world: World, store: SqlStore
) -> None:
    session = await world.session()
    await world.turn(session)
    [asked] = await world.bundle(session, ("a",), pending_id="p")
    [detached] = await store.detach_bundles(session.id, pending_id="p")
    assert detached.metadata == lifecycle.DETACH.change(asked.metadata)
    claim = await world.answer("p", "a")
    assert await store.transition_bundle("p", [m.id for m in claim.claimed], CLAIMED, RESTORE_CLAIM)
    restored = await store.get_message(asked.id)
    assert restored.metadata == lifecycle.RESTORE_CLAIM.change(claim.claimed[0].metadata)
    [cancelled] = await store.cancel_bundle("p")
    assert cancelled.metadata == lifecycle.CANCEL.change(restored.metadata)


async def test_the_guarded_transition_call_applies_a_claims_transition_once(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    claim = await world.answer("p", "a")
    ids = [m.id for m in claim.claimed]
    assert await world.store.transition_bundle("p", ids, CLAIMED, lifecycle.DELIVER)
    [row] = (await world.store.find_bundle("p") or pytest.fail("bundle gone")).rows
    assert row.metadata == lifecycle.DELIVER.change(claim.claimed[0].metadata)
    # The rows left the claimed state: the same call no longer applies, and writes nothing.
    assert not await world.store.transition_bundle("p", ids, CLAIMED, lifecycle.RETIRE_INTENT)
    assert not await world.store.transition_bundle("p", ids, CLAIMED, RESTORE_CLAIM)
    assert await world.store.get_message(row.id) == row


async def test_the_guarded_transition_call_refuses_an_expected_state_the_transition_does_not_leave(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    claim = await world.answer("p", "a")
    ids = [m.id for m in claim.claimed]
    with pytest.raises(lifecycle.TransitionNotAllowed):
        await world.store.transition_bundle("p", ids, lifecycle.LIVE, RESTORE_CLAIM)
    with pytest.raises(ValueError, match="does not settle a claim"):
        await world.store.transition_bundle("p", ids, lifecycle.LIVE, lifecycle.CANCEL)
    [still] = (await world.store.find_bundle("p") or pytest.fail("bundle gone")).rows
    assert _lifecycle_part(still) == _lifecycle_part(claim.claimed[0])
