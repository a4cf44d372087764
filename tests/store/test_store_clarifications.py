"""Store contract: clarification bundles (create, read, claim, confirm, restore, detach,
expire, cancel) on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clarion.domain import lifecycle
from clarion.domain.errors import Conflict, InvalidInput, NotFound
from clarion.domain.lifecycle import CLAIM, RESTORE_CLAIM, RETIRE_INTENT
from clarion.domain.models import ClarificationResponse, Message, MessageType, SessionState
from clarion.ports import NewMessage
from tests.whole_store import WholeStore

from .conftest import World


async def test_create_bundle_puts_every_row_in_the_current_turn(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session)
    rows = await world.bundle(session, ("db", "language", "deploy"))
    assert [r.turn_id for r in rows] == [turn.id] * 3
    assert {r.metadata["pending_id"] for r in rows} == {rows[0].metadata["pending_id"]}
    assert [r.requests_input for r in rows] == [False, False, True]


async def test_create_bundle_without_a_current_turn_writes_nothing(world: World) -> None:
    session = await world.session()
    with pytest.raises(Conflict):
        await world.bundle(session, pending_id="p-none")
    assert await world.store.find_bundle("p-none") is None


async def test_create_bundle_refuses_a_pending_id_already_taken(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    first = await world.bundle(session)
    pending_id = str(first[0].metadata["pending_id"])
    with pytest.raises(Conflict):
        await world.bundle(session, ("again",), pending_id=pending_id)
    bundle = await world.store.find_bundle(pending_id)
    assert bundle is not None and [r.id for r in bundle.rows] == [first[0].id]


async def test_create_bundle_goes_into_the_given_turn_of_its_session(world: World) -> None:
    session = await world.session()
    older = await world.turn(session)
    await world.turn(session)
    rows = await world.bundle(session, turn_id=older.id)
    assert [(r.turn_id, r.task_id) for r in rows] == [(older.id, session.task_id)]


async def test_create_bundle_refuses_a_turn_of_another_session(world: World) -> None:
    session, other = await world.session(), await world.session()
    await world.turn(session)
    foreign = await world.turn(other)
    with pytest.raises(NotFound):
        await world.bundle(session, turn_id=foreign.id)
    with pytest.raises(NotFound):
        await world.bundle(session, turn_id="no-such-turn")
    assert await world.store.pending_actions([session.id]) == {session.id: None}


async def test_create_bundle_rejects_rows_without_one_shared_pending_id(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = [
        NewMessage(
            session.id, "agent", MessageType.CLARIFICATION_REQUEST, "a", {"pending_id": "x"}
        ),
        NewMessage(
            session.id, "agent", MessageType.CLARIFICATION_REQUEST, "b", {"pending_id": "y"}
        ),
    ]
    with pytest.raises(InvalidInput):
        await world.store.create_bundle(session.id, rows)
    assert await world.store.find_bundle("x") is None


async def test_find_bundle_orders_rows_by_question_index_and_reports_current_turn(
    world: World,
) -> None:
    session = await world.session()
    turn = await world.turn(session)
    rows = await world.bundle(session, ("a", "b", "c"))
    bundle = await world.store.find_bundle(rows[0].metadata["pending_id"])
    assert bundle is not None
    assert [r.metadata["question_id"] for r in bundle.rows] == ["a", "b", "c"]
    assert bundle.current_turn_id == turn.id
    assert bundle.session.id == session.id


async def _stray_question(world: World, session_id: str, *, turn_id: str | None = None) -> Message:
    """Question "b" of bundle "p", written as a plain message: what makes a bundle malformed
    when it lands in another session, turn or type than the bundle's other rows."""
    return await world.store.add_message(
        NewMessage(
            session_id,
            "agent",
            MessageType.CLARIFICATION_REQUEST,
            "b?",
            {"pending_id": "p", "question_id": "b", "status": "pending"},
            turn_id=turn_id,
        )
    )


async def test_find_bundle_of_rows_in_two_sessions_reports_the_first_rows_session_and_turn(
    world: World,
) -> None:
    """A malformed bundle is read whole (a claim refuses it): its session is the session of
    its first row in bundle order, with that session's current turn."""
    session, other = await world.session(), await world.session()
    turn = await world.turn(session)
    await world.turn(other)
    await world.turn(other)
    first = await world.bundle(session, ("a",), pending_id="p")
    world.clock.advance(1)
    stray = await _stray_question(world, other.id)
    bundle = await world.store.find_bundle("p")
    assert bundle is not None
    assert [r.id for r in bundle.rows] == [first[0].id, stray.id]
    assert (bundle.session, bundle.current_turn_id) == (
        await world.store.get_session(session.id),
        turn.id,
    )


async def test_find_bundle_ignores_parent_question_rows(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a", "b"))
    await world.raw_message_metadata(rows[1].id, {**rows[1].metadata, "parent_question": "1"})
    bundle = await world.store.find_bundle(rows[0].metadata["pending_id"])
    assert bundle is not None
    assert [r.id for r in bundle.rows] == [rows[0].id]


async def test_list_active_bundle_ids_only_lists_current_turn_pending_bundles(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    old = await world.bundle(session, pending_id="old")
    await world.turn(session)
    await world.bundle(session, pending_id="new")
    await world.bundle(session, pending_id="done")
    await world.answer("done", "db")
    assert await world.store.list_active_bundle_ids(session.id) == ["new"]
    assert old[0].metadata["status"] == "pending"  # history is not rewritten


async def test_claim_answers_every_pending_row_with_its_own_response(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("db", "language"), pending_id="p")
    world.clock.advance(5)
    result = await world.answer("p", "db", "language")
    assert [m.id for m in result.claimed] == [r.id for r in rows]
    for message, qid in zip(result.claimed, ("db", "language"), strict=True):
        assert message.metadata["status"] == "answered"
        assert message.metadata["response_delivery_pending"] is True
        assert message.metadata["response"] == {
            "question_id": qid,
            "selected_options": [f"{qid}_opt1"],
            "custom_text": "note",
        }
        assert message.updated_at == world.clock.now()
    assert all(r.metadata["status"] == "answered" for r in result.bundle.rows)


async def test_claim_rejection_stores_the_reject_reason_and_no_response(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("db",), pending_id="p")
    result = await world.reject("p", "skip it")
    (claimed,) = result.claimed
    assert claimed.metadata["status"] == "rejected"
    assert claimed.metadata["reject_reason"] == "skip it"
    assert "response" not in claimed.metadata
    assert claimed.metadata["response_delivery_pending"] is True


async def test_second_claim_claims_nothing_and_returns_the_winner(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("db",), pending_id="p")
    first = await world.reject("p", "first")
    second = await world.answer("p", "db")
    assert first.claimed
    assert not second.claimed
    assert second.bundle.rows[0].metadata["reject_reason"] == "first"


async def test_claim_leaves_terminal_siblings_untouched(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a", "b", "c"), pending_id="p")
    cancelled = {**rows[0].metadata, "status": "cancelled"}
    await world.raw_message_metadata(rows[0].id, cancelled)
    before = await world.store.get_message(rows[0].id)
    result = await world.answer("p", "a", "b", "c")
    assert [m.id for m in result.claimed] == [rows[1].id, rows[2].id]
    after = await world.store.get_message(rows[0].id)
    assert after.metadata == cancelled
    assert after.updated_at == before.updated_at


async def test_claim_treats_missing_status_as_pending_in_the_current_turn(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a",), pending_id="p")
    await world.raw_message_metadata(
        rows[0].id, {k: v for k, v in rows[0].metadata.items() if k != "status"}
    )
    assert len((await world.answer("p", "a")).claimed) == 1


async def test_claim_refuses_a_superseded_bundle_even_with_missing_status(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a",), pending_id="p")
    await world.raw_message_metadata(
        rows[0].id, {k: v for k, v in rows[0].metadata.items() if k != "status"}
    )
    await world.turn(session)
    result = await world.answer("p", "a")
    assert result.claimed == ()
    assert "status" not in (await world.store.get_message(rows[0].id)).metadata


async def test_claim_refuses_a_bundle_of_a_terminal_session(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    assert await world.store.transition_session(session.id, SessionState.COMPLETED)
    assert (await world.answer("p", "a")).claimed == ()


async def test_claim_refuses_a_malformed_bundle_spanning_two_turns(world: World) -> None:
    session = await world.session()
    older = await world.turn(session)
    await world.turn(session)
    rows = await world.bundle(session, ("a",), pending_id="p")
    await _stray_question(world, session.id, turn_id=older.id)
    result = await world.answer("p", "a", "b")
    assert result.claimed == ()
    assert await world.status(rows[0].id) == "pending"


async def test_claim_refuses_a_malformed_bundle_spanning_two_sessions(world: World) -> None:
    session = await world.session()
    other = await world.session()
    await world.turn(session)
    await world.turn(other)
    await world.bundle(session, ("a",), pending_id="p")
    await _stray_question(world, other.id)
    assert (await world.answer("p", "a", "b")).claimed == ()


async def test_claim_refuses_a_malformed_bundle_mixing_types(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    await world.store.add_message(
        NewMessage(
            session.id,
            "agent",
            MessageType.PERMISSION_REQUEST,
            "may I?",
            {"pending_id": "p", "status": "pending"},
        )
    )
    result = await world.answer("p", "a")
    assert result.claimed == ()
    assert {r.type for r in result.bundle.rows} == {
        MessageType.CLARIFICATION_REQUEST,
        MessageType.PERMISSION_REQUEST,
    }


async def test_claim_of_an_unknown_bundle_raises_not_found(store: WholeStore) -> None:
    response = ClarificationResponse(pending_id="nope", answers=(), rejected=True)
    with pytest.raises(NotFound):
        await store.claim_response(response, CLAIM, now=datetime.now(UTC))


NOT_CLAIMS = [t for t in lifecycle.TRANSITIONS if t not in {CLAIM, lifecycle.CLAIM_BY_POLICY}]


@pytest.mark.parametrize("transition", NOT_CLAIMS, ids=str)
async def test_a_claim_naming_a_transition_that_is_not_a_claim_is_refused_and_writes_nothing(
    world: World, transition: lifecycle.Transition
) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a",), pending_id="p")
    response = ClarificationResponse(pending_id="p", answers=(), rejected=True)
    with pytest.raises(ValueError, match="is not a claim"):
        await world.store.claim_response(response, transition, now=world.clock.now())
    assert (await world.store.get_message(rows[0].id)).metadata == rows[0].metadata


@pytest.mark.parametrize(
    ("transition", "by_policy"), [(CLAIM, True), (lifecycle.CLAIM_BY_POLICY, False)], ids=str
)
async def test_a_claim_whose_transition_disagrees_with_the_response_is_refused_and_writes_nothing(
    world: World, transition: lifecycle.Transition, by_policy: bool
) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a",), pending_id="p")
    response = ClarificationResponse(pending_id="p", answers=(), rejected=True, by_policy=by_policy)
    with pytest.raises(ValueError, match="does not claim"):
        await world.store.claim_response(response, transition, now=world.clock.now())
    assert (await world.store.get_message(rows[0].id)).metadata == rows[0].metadata


async def test_confirm_delivery_retires_the_intent_and_keeps_the_claim_time(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a", "b"), pending_id="p")
    result = await world.answer("p", "a", "b")
    ids = [m.id for m in result.claimed]
    world.clock.advance(30)
    assert await world.store.confirm_delivery("p", ids, RETIRE_INTENT)
    for message_id, claimed in zip(ids, result.claimed, strict=True):
        message = await world.store.get_message(message_id)
        assert "response_delivery_pending" not in message.metadata
        assert message.metadata["status"] == "answered"
        assert message.updated_at == claimed.updated_at
    assert not await world.store.confirm_delivery("p", ids, RETIRE_INTENT)  # already retired


async def test_confirm_delivery_refuses_when_any_row_lacks_the_intent(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a", "b"), pending_id="p")
    await world.store.transition_bundle("p", lifecycle.CANCEL)
    assert not await world.store.confirm_delivery("p", [rows[0].id], RETIRE_INTENT)
    assert not await world.store.confirm_delivery("p", [], RETIRE_INTENT)


async def test_restore_claim_puts_exactly_the_claimed_rows_back_to_pending(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a", "b"), pending_id="p")
    result = await world.answer("p", "a", "b")
    assert await world.store.transition_bundle(
        "p", RESTORE_CLAIM, message_ids=[m.id for m in result.claimed]
    )
    for row in rows:
        meta = (await world.store.get_message(row.id)).metadata
        assert meta["status"] == "pending"
        assert "response" not in meta
        assert "response_delivery_pending" not in meta
    assert await world.store.list_active_bundle_ids(session.id) == ["p"]


async def test_restore_claim_refuses_after_a_newer_turn_started(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    result = await world.answer("p", "a")
    await world.turn(session)
    assert not await world.store.transition_bundle(
        "p", RESTORE_CLAIM, message_ids=[m.id for m in result.claimed]
    )
    assert await world.status(result.claimed[0].id) == "answered"


async def test_restore_claim_refuses_for_a_terminal_session(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    result = await world.answer("p", "a")
    await world.store.transition_session(session.id, SessionState.FAILED)
    assert not await world.store.transition_bundle(
        "p", RESTORE_CLAIM, message_ids=[m.id for m in result.claimed]
    )


async def test_restore_claim_refuses_once_delivery_was_confirmed(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("a",), pending_id="p")
    ids = [m.id for m in (await world.answer("p", "a")).claimed]
    assert await world.store.confirm_delivery("p", ids, RETIRE_INTENT)
    assert not await world.store.transition_bundle("p", RESTORE_CLAIM, message_ids=ids)
    assert await world.status(ids[0]) == "answered"


async def test_detach_marks_current_pending_rows_once(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    old = await world.bundle(session, pending_id="old")
    await world.turn(session)
    rows = await world.bundle(session, ("a", "b"), pending_id="p")
    changed = await world.store.transition_session_bundles(session.id, lifecycle.DETACH)
    assert [m.id for m in changed] == [r.id for r in rows]
    assert all(m.metadata["agent_disconnected"] is True for m in changed)
    assert await world.store.transition_session_bundles(session.id, lifecycle.DETACH) == ()
    assert "agent_disconnected" not in (await world.store.get_message(old[0].id)).metadata


async def test_detach_can_target_one_bundle(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, pending_id="p1")
    await world.bundle(session, pending_id="p2")
    changed = await world.store.transition_session_bundles(
        session.id, lifecycle.DETACH, pending_id="p2"
    )
    assert {m.metadata["pending_id"] for m in changed} == {"p2"}


async def test_expire_marks_current_pending_rows_expired_even_when_terminal(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a", "b"), pending_id="p")
    await world.answer("p", "a", "b")
    await world.store.transition_bundle("p", RESTORE_CLAIM, message_ids=[r.id for r in rows])
    await world.store.transition_session(session.id, SessionState.COMPLETED)
    changed = await world.store.transition_session_bundles(session.id, lifecycle.EXPIRE)
    assert [m.metadata["status"] for m in changed] == ["expired", "expired"]
    assert all(m.metadata["agent_disconnected"] is True for m in changed)
    assert await world.store.transition_session_bundles(session.id, lifecycle.EXPIRE) == ()


async def test_cancel_changes_only_pending_rows_of_the_bundle(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, ("a", "b"), pending_id="p")
    await world.raw_message_metadata(rows[0].id, {**rows[0].metadata, "status": "expired"})
    changed = await world.store.transition_bundle("p", lifecycle.CANCEL)
    assert [m.id for m in changed] == [rows[1].id]
    assert changed[0].metadata["status"] == "cancelled"
    assert await world.status(rows[0].id) == "expired"
    assert await world.store.transition_bundle("p", lifecycle.CANCEL) == ()
    assert await world.store.transition_bundle("unknown", lifecycle.CANCEL) == ()


async def test_cancel_never_rewrites_superseded_history(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, pending_id="p")
    await world.turn(session)
    assert await world.store.transition_bundle("p", lifecycle.CANCEL) == ()
    assert await world.status(rows[0].id) == "pending"
