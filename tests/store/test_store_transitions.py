"""The store applies the transitions of domain/lifecycle.py: a guarded call writes exactly its
transition's change on the rows its guard selects, and refuses a transition it does not
implement. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from clarion.domain import lifecycle
from clarion.domain.lifecycle import RESTORE_CLAIM
from clarion.domain.models import Message
from tests.whole_store import WholeStore

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
    world: World, store: WholeStore
) -> None:
    session = await world.session()
    await world.turn(session)
    [asked] = await world.bundle(session, ("a",), pending_id="p")
    [detached] = await store.transition_session_bundles(
        session.id, lifecycle.DETACH, pending_id="p"
    )
    assert detached.metadata == lifecycle.DETACH.change(asked.metadata)
    claim = await world.answer("p", "a")
    assert await store.transition_bundle(
        "p", RESTORE_CLAIM, message_ids=[m.id for m in claim.claimed]
    )
    restored = await store.get_message(asked.id)
    assert restored.metadata == lifecycle.RESTORE_CLAIM.change(claim.claimed[0].metadata)
    [cancelled] = await store.transition_bundle("p", lifecycle.CANCEL)
    assert cancelled.metadata == lifecycle.CANCEL.change(restored.metadata)


async def test_the_guarded_transition_call_applies_a_claims_transition_once(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    claim = await world.answer("p", "a")
    ids = [m.id for m in claim.claimed]
    assert await world.store.transition_bundle("p", lifecycle.DELIVER, message_ids=ids)
    [row] = (await world.store.find_bundle("p") or pytest.fail("bundle gone")).rows
    assert row.metadata == lifecycle.DELIVER.change(claim.claimed[0].metadata)
    # The rows left the claimed state: the same call no longer applies, and writes nothing.
    assert not await world.store.transition_bundle("p", lifecycle.RETIRE_INTENT, message_ids=ids)
    assert not await world.store.transition_bundle("p", RESTORE_CLAIM, message_ids=ids)
    assert await world.store.get_message(row.id) == row


async def test_the_guarded_transition_call_takes_ids_only_for_a_claims_transitions(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    claim = await world.answer("p", "a")
    ids = [m.id for m in claim.claimed]
    with pytest.raises(ValueError, match="give their ids"):
        await world.store.transition_bundle("p", RESTORE_CLAIM)
    with pytest.raises(ValueError, match="not given ids"):
        await world.store.transition_bundle("p", lifecycle.CANCEL, message_ids=ids)
    [still] = (await world.store.find_bundle("p") or pytest.fail("bundle gone")).rows
    assert _lifecycle_part(still) == _lifecycle_part(claim.claimed[0])


# What each generic call applies; every other transition of the table it refuses.
ONE_BUNDLE = {
    lifecycle.RESTORE_CLAIM,
    lifecycle.DELIVER,
    lifecycle.RETIRE_INTENT,
    lifecycle.CANCEL,
    lifecycle.MARK_UNREAD,
    lifecycle.CLAIM_RESEND,
    lifecycle.RELEASE_RESEND,
    lifecycle.FINISH_RESEND,
}
SESSION_BUNDLES = {lifecycle.DETACH, lifecycle.EXPIRE}
EVERY_BUNDLE = {lifecycle.DETACH, lifecycle.RELEASE_RESEND, lifecycle.MARK_UNREAD}


def _others(applied: set[lifecycle.Transition]) -> list[lifecycle.Transition]:
    return [t for t in lifecycle.TRANSITIONS if t not in applied]


async def _asked(world: World) -> tuple[str, Message]:
    session = await world.session()
    await world.turn(session)
    [asked] = await world.bundle(session, ("a",), pending_id="p")
    return session.id, asked


async def _unchanged(world: World, asked: Message) -> None:
    assert await world.store.get_message(asked.id) == asked


@pytest.mark.parametrize("transition", _others(ONE_BUNDLE), ids=str)
async def test_the_bundle_call_refuses_a_transition_it_does_not_apply(
    world: World, transition: lifecycle.Transition
) -> None:
    _, asked = await _asked(world)
    with pytest.raises(ValueError, match=str(transition)):
        await world.store.transition_bundle("p", transition)
    await _unchanged(world, asked)


@pytest.mark.parametrize(
    "transition",
    [
        lifecycle.CLAIM_RESEND,
        lifecycle.RELEASE_RESEND,
        lifecycle.FINISH_RESEND,
        lifecycle.MARK_UNREAD,
    ],
    ids=str,
)
async def test_the_bundle_call_applies_to_no_row_outside_the_transitions_sources(
    world: World, transition: lifecycle.Transition
) -> None:
    _, asked = await _asked(world)  # live: none of these leaves it
    values = lifecycle.resent_by("t") if transition is lifecycle.FINISH_RESEND else None
    assert await world.store.transition_bundle("p", transition, values=values) == ()
    await _unchanged(world, asked)


async def test_the_bundle_call_does_not_apply_to_rows_that_left_the_expected_state(
    world: World,
) -> None:
    await _asked(world)
    claim = await world.answer("p", "a")
    # The caller believed it live; the rows are claimed now: CANCEL's guard selects none.
    assert await world.store.transition_bundle("p", lifecycle.CANCEL) == ()
    assert await world.store.get_message(claim.claimed[0].id) == claim.claimed[0]


@pytest.mark.parametrize("transition", _others(SESSION_BUNDLES), ids=str)
async def test_the_session_call_refuses_a_transition_it_does_not_apply(
    world: World, transition: lifecycle.Transition
) -> None:
    session_id, asked = await _asked(world)
    with pytest.raises(ValueError, match=str(transition)):
        await world.store.transition_session_bundles(session_id, transition)
    await _unchanged(world, asked)


async def test_the_session_call_expires_a_whole_session_only(world: World) -> None:
    session_id, asked = await _asked(world)
    with pytest.raises(ValueError, match="not one bundle"):
        await world.store.transition_session_bundles(session_id, lifecycle.EXPIRE, pending_id="p")
    await _unchanged(world, asked)


async def test_the_session_call_writes_its_transitions_change_once(world: World) -> None:
    session_id, asked = await _asked(world)
    [expired] = await world.store.transition_session_bundles(session_id, lifecycle.EXPIRE)
    assert expired.metadata == lifecycle.EXPIRE.change(asked.metadata)
    assert await world.store.transition_session_bundles(session_id, lifecycle.EXPIRE) == ()
    assert await world.store.transition_session_bundles(session_id, lifecycle.DETACH) == ()


@pytest.mark.parametrize("transition", _others(EVERY_BUNDLE), ids=str)
async def test_the_startup_call_refuses_a_transition_it_does_not_apply(
    world: World, transition: lifecycle.Transition
) -> None:
    _, asked = await _asked(world)
    with pytest.raises(ValueError, match=str(transition)):
        await world.store.transition_all_bundles(transition)
    await _unchanged(world, asked)


async def test_the_startup_call_writes_its_transitions_change_once(world: World) -> None:
    session_id, asked = await _asked(world)
    [bundle] = await world.store.transition_all_bundles(lifecycle.DETACH)
    assert (bundle.session_id, bundle.pending_id, bundle.rows) == (session_id, "p", 1)
    detached = await world.store.get_message(asked.id)
    assert detached.metadata == lifecycle.DETACH.change(asked.metadata)
    assert await world.store.transition_all_bundles(lifecycle.DETACH) == ()
    assert await world.store.transition_all_bundles(lifecycle.RELEASE_RESEND) == ()
    assert await world.store.transition_all_bundles(lifecycle.MARK_UNREAD) == ()
