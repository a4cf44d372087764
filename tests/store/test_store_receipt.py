"""Store contract: whether the agent received an answer (its receipt, `delivery` on the
wire), the person's resend of an ambiguous one, and each session's remembered ACP session.
Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

from clarion.domain import lifecycle
from clarion.domain.bundles import receipt_of
from clarion.domain.lifecycle import DELIVER, RETIRE_INTENT
from clarion.domain.models import Receipt, Session, SessionState

from .conftest import World


async def _ambiguous(world: World, *, pending_id: str = "p") -> tuple[Session, list[str]]:
    """An answered bundle whose attempted successor a restart kept without evidence."""
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, ("a", "b"), pending_id=pending_id)
    ids = [m.id for m in (await world.answer(pending_id, "a", "b")).claimed]
    world.clock.advance(1)
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id=pending_id, message_ids=ids
    )
    assert await world.store.mark_attempted(turn.id)
    (decision,) = await world.store.reconcile_reservations()
    assert decision.kept and decision.ambiguous
    return session, ids


async def _metas(world: World, ids: list[str]) -> list[dict[str, Any]]:
    return [dict((await world.store.get_message(i)).metadata) for i in ids]


async def _receipt(world: World, pending_id: str) -> Receipt | None:
    bundle = await world.store.find_bundle(pending_id)
    assert bundle is not None
    return receipt_of(bundle)


async def test_kept_reservation_without_output_marks_its_answer_ambiguous(world: World) -> None:
    _, ids = await _ambiguous(world)
    assert all(m["delivery"] == "ambiguous" for m in await _metas(world, ids))
    assert await _receipt(world, "p") is Receipt.AMBIGUOUS


async def test_kept_reservation_with_output_marks_its_answer_delivered(world: World) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    ids = [m.id for m in (await world.answer("p", "a")).claimed]
    world.clock.advance(1)
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    await world.say(session, "the agent has it", turn_id=turn.id)
    (decision,) = await world.store.reconcile_reservations()
    assert decision.kept and not decision.ambiguous
    assert await _receipt(world, "p") is Receipt.DELIVERED


async def test_published_successor_and_confirmed_delivery_record_delivered(world: World) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, ("a",), pending_id="resumed")
    ids = [m.id for m in (await world.answer("resumed", "a")).claimed]
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="resumed", message_ids=ids
    )
    assert await world.store.publish_successor(
        turn.id, DELIVER, pending_id="resumed", message_ids=ids
    )
    assert await _receipt(world, "resumed") is Receipt.DELIVERED

    await world.bundle(session, ("a",), pending_id="skipped", turn_id=turn.id)
    skipped = [m.id for m in (await world.reject("skipped")).claimed]
    assert await world.store.confirm_delivery("skipped", skipped, RETIRE_INTENT)
    assert await _receipt(world, "skipped") is None, "a detached Skip reaches no agent"


async def test_resend_claims_once_and_settles_as_delivered(world: World) -> None:
    session, ids = await _ambiguous(world)
    claimed = await world.store.transition_bundle("p", lifecycle.CLAIM_RESEND)
    assert sorted(m.id for m in claimed) == sorted(ids)
    assert all(m.metadata["resend_pending"] is True for m in claimed)
    assert await world.store.transition_bundle("p", lifecycle.CLAIM_RESEND) == (), (
        "one resend in flight at most"
    )
    turn = await world.turn(session)

    finished = await world.store.transition_bundle(
        "p", lifecycle.FINISH_RESEND, values=lifecycle.resent_by(turn.id)
    )

    assert len(finished) == len(ids)
    for meta in await _metas(world, ids):
        assert meta["delivery"] == "delivered" and meta["resent_turn_id"] == turn.id
        assert "resend_pending" not in meta
    assert await world.store.transition_bundle("p", lifecycle.CLAIM_RESEND) == ()


async def test_racing_resend_claims_let_exactly_one_win(world: World) -> None:
    await _ambiguous(world)
    results = await asyncio.gather(
        *(world.store.transition_bundle("p", lifecycle.CLAIM_RESEND) for _ in range(5))
    )
    assert sum(bool(r) for r in results) == 1


async def test_released_resend_reads_ambiguous_and_can_be_claimed_again(world: World) -> None:
    _, ids = await _ambiguous(world)
    await world.store.transition_bundle("p", lifecycle.CLAIM_RESEND)
    assert len(await world.store.transition_bundle("p", lifecycle.RELEASE_RESEND)) == len(ids)
    assert await _receipt(world, "p") is Receipt.AMBIGUOUS
    assert await world.store.transition_bundle("p", lifecycle.CLAIM_RESEND)


async def test_startup_releases_every_resend_left_in_flight(world: World) -> None:
    await _ambiguous(world, pending_id="p")
    await _ambiguous(world, pending_id="q")
    await world.store.transition_bundle("p", lifecycle.CLAIM_RESEND)
    await world.store.transition_bundle("q", lifecycle.CLAIM_RESEND)
    released = await world.store.transition_all_bundles(lifecycle.RELEASE_RESEND)
    assert [b.pending_id for b in released] == ["p", "q"]
    assert await world.store.transition_all_bundles(lifecycle.RELEASE_RESEND) == ()
    assert await world.store.transition_bundle("p", lifecycle.CLAIM_RESEND)


async def test_resend_is_refused_for_answers_not_ambiguous_or_ended_sessions(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="open")
    assert await world.store.transition_bundle("open", lifecycle.CLAIM_RESEND) == ()
    assert await world.store.transition_bundle("missing", lifecycle.CLAIM_RESEND) == ()
    ended, _ = await _ambiguous(world, pending_id="ended")
    await world.store.transition_session(ended.id, SessionState.COMPLETED)
    assert await world.store.transition_bundle("ended", lifecycle.CLAIM_RESEND) == ()


async def test_recent_messages_are_the_newest_oldest_first(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session)
    for n in range(5):
        await world.say(session, f"m{n}", turn_id=turn.id)
        world.clock.advance(1)
    recent = await world.store.recent_messages(session.id, 3)
    assert [m.content for m in recent] == ["m2", "m3", "m4"]


async def test_acp_session_is_remembered_on_the_session(world: World) -> None:
    session = await world.session()
    assert await world.store.remember_acp_session(session.id, "acp-1")
    assert not await world.store.remember_acp_session(session.id, "acp-1")
    stored = await world.store.get_session(session.id)
    assert stored.metadata["acp_session_id"] == "acp-1"
    assert await world.store.remember_acp_session(session.id, "acp-2")
    assert (await world.store.get_session(session.id)).metadata["acp_session_id"] == "acp-2"


async def _live_delivered(world: World, pending_id: str) -> tuple[Session, list[str]]:
    session = await world.session()
    turn = await world.turn(session)
    await world.bundle(session, ("a",), pending_id=pending_id, turn_id=turn.id)
    ids = [m.id for m in (await world.answer(pending_id, "a")).claimed]
    assert await world.store.confirm_delivery(pending_id, ids, DELIVER)
    world.clock.advance(1)
    return session, ids


async def test_live_answer_the_agent_never_spoke_after_reads_ambiguous_at_startup(
    world: World,
) -> None:
    await _live_delivered(world, "unread")
    spoke, _ = await _live_delivered(world, "read")
    await world.say(spoke, "You answered: a")  # in the open turn, after the answer

    marked = await world.store.transition_all_bundles(lifecycle.MARK_UNREAD)
    assert [b.pending_id for b in marked] == ["unread"]

    assert await _receipt(world, "unread") is Receipt.AMBIGUOUS
    assert await _receipt(world, "read") is Receipt.DELIVERED
    assert await world.store.transition_all_bundles(lifecycle.MARK_UNREAD) == ()
    assert await world.store.transition_bundle("unread", lifecycle.CLAIM_RESEND)


async def test_a_completed_turn_proves_the_agent_had_its_live_answer(world: World) -> None:
    session, _ = await _live_delivered(world, "done")
    turn = await world.store.find_current_turn(session.id)
    assert turn is not None and await world.store.complete_turn(turn.id)
    assert await world.store.transition_all_bundles(lifecycle.MARK_UNREAD) == ()
    assert await _receipt(world, "done") is Receipt.DELIVERED


async def test_a_live_answer_the_agent_reported_unread_is_marked_once_and_resent_once(
    world: World,
) -> None:
    session, ids = await _live_delivered(world, "failed-call")
    await _live_delivered(world, "other")

    marked = await world.store.transition_bundle("failed-call", lifecycle.MARK_UNREAD)

    assert sorted(m.id for m in marked) == sorted(ids)
    assert await _receipt(world, "failed-call") is Receipt.AMBIGUOUS
    assert await _receipt(world, "other") is Receipt.DELIVERED, "only the bundle named"
    assert await world.store.transition_bundle("failed-call", lifecycle.MARK_UNREAD) == (), (
        "already ambiguous: nothing to mark"
    )
    assert await world.store.transition_bundle("failed-call", lifecycle.CLAIM_RESEND)
    turn = await world.turn(session)
    await world.store.transition_bundle(
        "failed-call",
        lifecycle.FINISH_RESEND,
        values=lifecycle.resent_by(turn.id),
    )
    assert await world.store.transition_bundle("failed-call", lifecycle.MARK_UNREAD) == (), (
        "an answer already sent again is not marked unread again"
    )
    assert await _receipt(world, "failed-call") is Receipt.DELIVERED
