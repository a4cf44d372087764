"""Store contract: startup reconciliation of reservations, delivery intents, the start markers
of kept turns and detachable bundles."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.domain import lifecycle
from clarion.domain.models import DISPATCH_KEYS, Message, Session, SessionState, Turn
from clarion.store import CorruptReservationError

from .conftest import World


async def _reserved(
    world: World, *, pending_id: str = "p"
) -> tuple[Session, Turn, Turn, list[str]]:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, ("a", "b"), pending_id=pending_id)
    claimed = (await world.answer(pending_id, "a", "b")).claimed
    ids = [m.id for m in claimed]
    world.clock.advance(1)
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id=pending_id, message_ids=ids
    )
    return session, source, turn, ids


async def _metas(world: World, ids: list[str]) -> list[dict[str, Any]]:
    return [dict((await world.store.get_message(i)).metadata) for i in ids]


async def test_empty_reservation_is_deleted_and_exactly_its_claim_restored(world: World) -> None:
    session, source, turn, ids = await _reserved(world)
    other_session = await world.session()
    await world.turn(other_session)
    await world.bundle(other_session, pending_id="other")
    await world.answer("other", "db")
    (decision,) = await world.store.reconcile_reservations()
    assert (decision.turn_id, decision.kept, decision.pending_id) == (turn.id, False, "p")
    assert decision.message_ids == tuple(ids)
    assert [t.id for t in await world.store.list_visible_turns(session.id)] == [source.id]
    assert all(m["status"] == "pending" and "response" not in m for m in await _metas(world, ids))
    other = (await world.store.find_bundle("other")).rows[0]  # type: ignore[union-attr]
    assert other.metadata["response_delivery_pending"] is True  # not this reservation's claim
    assert await world.store.reconcile_reservations() == []


async def test_attempted_reservation_is_kept_and_its_claim_stays_terminal(world: World) -> None:
    session, _, turn, ids = await _reserved(world)
    await world.store.mark_attempted(turn.id)
    (decision,) = await world.store.reconcile_reservations()
    assert decision.kept
    stored = await world.store.get_turn(turn.id)
    assert not set(DISPATCH_KEYS) - {"prompt_dispatch_start_event_pending"} & set(stored.metadata)
    assert stored.metadata["prompt_dispatch_start_event_pending"] is True
    assert (await world.store.find_current_turn(session.id)).id == turn.id  # type: ignore[union-attr]
    for meta in await _metas(world, ids):
        assert meta["status"] == "answered"
        assert "response_delivery_pending" not in meta
    assert await world.store.find_live_reservation(session.id) is None
    assert await world.store.reconcile_reservations() == []
    assert await world.store.reconcile_intents() == []


async def test_referenced_reservation_is_kept_without_an_attempt_marker(world: World) -> None:
    session, _, turn, ids = await _reserved(world)
    await world.say(session, "output", turn_id=turn.id)
    (decision,) = await world.store.reconcile_reservations()
    assert decision.kept
    assert all(m["status"] == "answered" for m in await _metas(world, ids))


async def test_start_markers_list_kept_successors_until_cleared(world: World) -> None:
    _, _, turn, _ = await _reserved(world)
    await world.store.mark_attempted(turn.id)
    await world.store.reconcile_reservations()
    assert [t.id for t in await world.store.list_start_marked_turns()] == [turn.id]
    assert await world.store.clear_start_marker(turn.id)
    assert not await world.store.clear_start_marker(turn.id)
    assert await world.store.list_start_marked_turns() == []
    assert (
        "prompt_dispatch_start_event_pending" not in (await world.store.get_turn(turn.id)).metadata
    )


@pytest.mark.parametrize(
    "broken",
    [
        {"prompt_dispatch_clarification_message_ids": [""]},
        {"prompt_dispatch_clarification_message_ids": [7]},
        {"prompt_dispatch_clarification_message_ids": "not-a-list"},
        {"prompt_dispatch_clarification_message_ids": []},
        {"prompt_dispatch_clarification_pending_id": ""},
        {"prompt_dispatch_clarification_turn_id": None},
    ],
)
async def test_malformed_reservation_raises_and_changes_nothing(
    world: World, broken: dict[str, Any]
) -> None:
    _, _, good, good_ids = await _reserved(world, pending_id="good")
    _, _, bad, bad_ids = await _reserved(world, pending_id="bad")
    await world.raw_turn_metadata(bad.id, {**bad.metadata, **broken})
    before_turns = [await world.store.get_turn(good.id), await world.store.get_turn(bad.id)]
    before_rows = await _metas(world, good_ids + bad_ids)
    with pytest.raises(CorruptReservationError) as caught:
        await world.store.reconcile_reservations()
    assert caught.value.turn_id == bad.id
    after_turns = [await world.store.get_turn(good.id), await world.store.get_turn(bad.id)]
    assert after_turns == before_turns
    assert await _metas(world, good_ids + bad_ids) == before_rows


async def test_reservation_missing_its_recovery_keys_raises(world: World) -> None:
    session, _, turn, _ = await _reserved(world)
    await world.raw_turn_metadata(turn.id, {"prompt_dispatch_pending": True})
    with pytest.raises(CorruptReservationError):
        await world.store.reconcile_reservations()
    assert (await world.store.find_live_reservation(session.id)).id == turn.id


async def _claim(world: World) -> tuple[Session, list[Message]]:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a", "b"), pending_id="p")
    return session, list((await world.answer("p", "a", "b")).claimed)


async def test_unowned_current_intent_is_restored_to_pending(world: World) -> None:
    session, claimed = await _claim(world)
    (decision,) = await world.store.reconcile_intents()
    assert (decision.pending_id, decision.session_id, decision.restored) == ("p", session.id, True)
    assert set(decision.message_ids) == {m.id for m in claimed}
    assert await world.store.list_active_bundle_ids(session.id) == ["p"]
    assert await world.store.reconcile_intents() == []


async def test_superseded_intent_is_retired_and_terminal_history_kept(world: World) -> None:
    session, claimed = await _claim(world)
    await world.turn(session)
    (decision,) = await world.store.reconcile_intents()
    assert not decision.restored
    for meta in await _metas(world, [m.id for m in claimed]):
        assert meta["status"] == "answered"
        assert "response_delivery_pending" not in meta


async def test_intent_of_a_terminal_session_is_retired(world: World) -> None:
    session, claimed = await _claim(world)
    await world.store.transition_session(session.id, SessionState.CANCELLED)
    (decision,) = await world.store.reconcile_intents()
    assert not decision.restored
    assert all(m["status"] == "answered" for m in await _metas(world, [c.id for c in claimed]))


async def test_intents_owned_by_a_live_reservation_are_left_to_reservation_recovery(
    world: World,
) -> None:
    _, _, _, ids = await _reserved(world)
    assert await world.store.reconcile_intents() == []
    assert all(m["response_delivery_pending"] is True for m in await _metas(world, ids))


async def test_detachable_bundles_are_current_pending_and_not_yet_detached(world: World) -> None:
    s1 = await world.session()
    await world.turn(s1)
    await world.bundle(s1, pending_id="superseded")
    await world.turn(s1)
    await world.bundle(s1, pending_id="live")
    await world.bundle(s1, pending_id="detached")
    await world.store.transition_session_bundles(s1.id, lifecycle.DETACH, pending_id="detached")
    s2 = await world.session()
    await world.turn(s2)
    await world.bundle(s2, pending_id="terminal")
    await world.store.transition_session(s2.id, SessionState.COMPLETED)
    assert await world.store.list_detachable_bundles() == [(s1.id, "live")]
