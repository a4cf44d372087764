"""Store contract: detached-answer successor reservations."""

from __future__ import annotations

import pytest

from clarion.domain.errors import Conflict, InvalidInput
from clarion.domain.lifecycle import (
    DELIVER,
    DISPATCH_UNKNOWN,
    RESTORE_CLAIM,
    RETIRE_INTENT,
    Transition,
)
from clarion.domain.models import DISPATCH_KEYS, Message, Session, Turn

from .conftest import World


async def _claimed(world: World) -> tuple[Session, Turn, tuple[Message, ...]]:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, ("a", "b"), pending_id="p")
    claimed = (await world.answer("p", "a", "b")).claimed
    world.clock.advance(1)
    return session, source, claimed


async def test_reserve_records_kandevs_dispatch_keys(world: World) -> None:
    session, source, claimed = await _claimed(world)
    ids = [m.id for m in claimed]
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    stored = await world.store.get_turn(turn.id)
    assert stored.metadata == {
        "prompt_dispatch_pending": True,
        "prompt_dispatch_clarification_turn_id": source.id,
        "prompt_dispatch_clarification_pending_id": "p",
        "prompt_dispatch_clarification_message_ids": ids,
    }
    assert (await world.store.find_live_reservation(session.id)).id == turn.id


@pytest.mark.parametrize("bad", [[], [""], ["ok", ""]])
async def test_reserve_refuses_empty_claimed_ids(world: World, bad: list[str]) -> None:
    session, source, _ = await _claimed(world)
    with pytest.raises(InvalidInput):
        await world.store.reserve_successor(
            session.id, source_turn_id=source.id, pending_id="p", message_ids=bad
        )
    assert await world.store.find_live_reservation(session.id) is None


async def test_reserve_refuses_a_second_live_reservation(world: World) -> None:
    session, source, claimed = await _claimed(world)
    ids = [m.id for m in claimed]
    await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    with pytest.raises(Conflict):
        await world.store.reserve_successor(
            session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
        )


async def test_publish_clears_dispatch_keys_and_the_claimed_intents(world: World) -> None:
    session, source, claimed = await _claimed(world)
    ids = [m.id for m in claimed]
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    assert await world.store.mark_attempted(turn.id)
    assert await world.store.publish_successor(turn.id, DELIVER, pending_id="p", message_ids=ids)
    stored = await world.store.get_turn(turn.id)
    assert not set(DISPATCH_KEYS) & set(stored.metadata)
    for message in claimed:
        meta = (await world.store.get_message(message.id)).metadata
        assert meta["status"] == "answered"
        assert "response_delivery_pending" not in meta
    assert await world.store.find_live_reservation(session.id) is None
    assert (await world.store.find_current_turn(session.id)).id == turn.id  # type: ignore[union-attr]
    assert turn.id in [t.id for t in await world.store.list_visible_turns(session.id)]
    assert not await world.store.publish_successor(
        turn.id, DELIVER, pending_id="p", message_ids=ids
    )


async def test_publish_refuses_a_different_pending_id(world: World) -> None:
    session, source, claimed = await _claimed(world)
    ids = [m.id for m in claimed]
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    assert not await world.store.publish_successor(
        turn.id, DELIVER, pending_id="other", message_ids=ids
    )
    assert (await world.store.find_live_reservation(session.id)) is not None


@pytest.mark.parametrize("transition", [RETIRE_INTENT, DISPATCH_UNKNOWN, RESTORE_CLAIM])
async def test_publish_applies_deliver_only_and_another_transition_writes_nothing(
    world: World, transition: Transition
) -> None:
    session, source, claimed = await _claimed(world)
    ids = [m.id for m in claimed]
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    assert await world.store.mark_attempted(turn.id)
    with pytest.raises(ValueError, match="does not settle"):
        await world.store.publish_successor(turn.id, transition, pending_id="p", message_ids=ids)
    assert await world.store.find_live_reservation(session.id) is not None
    for message in claimed:
        assert (await world.store.get_message(message.id)).metadata == message.metadata


async def test_mark_attempted_applies_only_to_a_live_reservation(world: World) -> None:
    session, source, claimed = await _claimed(world)
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    assert await world.store.mark_attempted(turn.id)
    assert (await world.store.get_turn(turn.id)).metadata["prompt_dispatch_attempted"] is True
    assert not await world.store.mark_attempted(source.id)
    assert not await world.store.mark_attempted("missing")


async def test_rollback_deletes_an_unreferenced_reservation_and_restore_then_applies(
    world: World,
) -> None:
    session, source, claimed = await _claimed(world)
    ids = [m.id for m in claimed]
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    assert await world.store.mark_attempted(turn.id)
    # Attempted: the successor is current, so the claim cannot be restored yet.
    assert not await world.store.transition_bundle("p", RESTORE_CLAIM, message_ids=ids)
    assert await world.store.rollback_successor(turn.id)
    assert await world.store.find_live_reservation(session.id) is None
    assert (await world.store.find_current_turn(session.id)).id == source.id  # type: ignore[union-attr]
    assert await world.store.transition_bundle("p", RESTORE_CLAIM, message_ids=ids)
    assert await world.store.list_active_bundle_ids(session.id) == ["p"]


async def test_rollback_keeps_a_referenced_reservation(world: World) -> None:
    session, source, claimed = await _claimed(world)
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    await world.say(session, "accepted output", turn_id=turn.id)
    assert not await world.store.rollback_successor(turn.id)
    assert (await world.store.get_turn(turn.id)).id == turn.id


async def test_rollback_never_deletes_a_published_turn(world: World) -> None:
    _session, source, _ = await _claimed(world)
    assert not await world.store.rollback_successor(source.id)
    assert (await world.store.get_turn(source.id)).id == source.id
