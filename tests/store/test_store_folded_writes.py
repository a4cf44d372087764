"""Store contract: writes folded into one transaction, and transitions that write nothing."""

from __future__ import annotations

from clarion.domain.lifecycle import DELIVER, RETIRE_INTENT
from clarion.domain.models import Session, SessionState, Turn

from .conftest import World


async def test_confirm_delivery_can_move_the_session_in_the_same_transaction(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, pending_id="p")
    await world.store.transition_session(session.id, SessionState.WAITING_FOR_INPUT)
    claim = await world.answer("p", "db")
    world.clock.advance(1)

    ok = await world.store.confirm_delivery(
        "p", [r.id for r in claim.claimed], RETIRE_INTENT, session_state=SessionState.RUNNING
    )

    assert ok
    after = await world.store.get_session(session.id)
    assert after.state is SessionState.RUNNING and after.updated_at == world.clock.now()
    assert "response_delivery_pending" not in (await world.store.get_message(rows[0].id)).metadata


async def test_confirm_delivery_returns_the_rows_and_the_session_as_they_now_stand(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, ("q1", "q2"), pending_id="p")
    claim = await world.answer("p", "q1", "q2")
    world.clock.advance(1)

    written = await world.store.confirm_delivery(
        "p", [r.id for r in claim.claimed], RETIRE_INTENT, session_state=SessionState.RUNNING
    )

    assert written is not None
    assert list(written.rows) == [await world.store.get_message(r.id) for r in claim.claimed]
    assert all("response_delivery_pending" not in r.metadata for r in written.rows)
    assert written.session == await world.store.get_session(session.id)
    # Without a state to move to, there is no session to report.
    other = await world.session()
    await world.turn(other)
    await world.bundle(other, pending_id="p2")
    claim2 = await world.answer("p2", "db")
    plain = await world.store.confirm_delivery("p2", [r.id for r in claim2.claimed], RETIRE_INTENT)
    assert plain is not None and plain.session is None and len(plain.rows) == 1


async def test_create_bundle_can_move_the_session_in_the_same_transaction(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    world.clock.advance(4)

    written = await world.write_bundle(
        session, ("q1", "q2"), pending_id="p", session_state=SessionState.WAITING_FOR_INPUT
    )

    after = await world.store.get_session(session.id)
    assert after.state is SessionState.WAITING_FOR_INPUT and after.updated_at == world.clock.now()
    assert written.session == after
    bundle = await world.store.find_bundle("p")
    assert bundle is not None and list(written.rows) == list(bundle.rows)


async def test_create_bundle_without_a_state_leaves_the_session_alone(world: World) -> None:
    session = await world.session()
    await world.turn(session)

    written = await world.write_bundle(session, pending_id="p")

    assert written.session is None
    assert (await world.store.get_session(session.id)).state is session.state


async def test_a_confirmation_that_does_not_apply_leaves_the_session_alone(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, pending_id="p")
    await world.store.transition_session(session.id, SessionState.WAITING_FOR_INPUT)

    ok = await world.store.confirm_delivery(
        "p", [rows[0].id], RETIRE_INTENT, session_state=SessionState.RUNNING
    )

    assert ok is None
    assert (await world.store.get_session(session.id)).state is SessionState.WAITING_FOR_INPUT


async def test_confirm_delivery_never_revives_a_terminal_session(world: World) -> None:
    session = await world.session()
    await world.turn(session)
    await world.bundle(session, pending_id="p")
    claim = await world.answer("p", "db")
    await world.store.transition_session(session.id, SessionState.COMPLETED)

    written = await world.store.confirm_delivery(
        "p", [r.id for r in claim.claimed], RETIRE_INTENT, session_state=SessionState.RUNNING
    )

    # The rows are confirmed; the session, ended, neither moves nor is reported as moved.
    assert written is not None and written.session is None
    assert (await world.store.get_session(session.id)).state is SessionState.COMPLETED


async def test_transition_to_the_current_state_reports_true_and_rewrites_nothing(
    world: World,
) -> None:
    session = await world.session()
    assert await world.store.transition_session(session.id, SessionState.RUNNING)
    before = await world.store.get_session(session.id)
    world.clock.advance(5)

    assert await world.store.transition_session(session.id, SessionState.RUNNING)
    assert (await world.store.get_session(session.id)).updated_at == before.updated_at
    # Not allowed from its own state: false, as before.
    assert not await world.store.transition_session(
        session.id, SessionState.RUNNING, allowed_from=[SessionState.IDLE]
    )
    assert not await world.store.transition_session("missing", SessionState.RUNNING)


async def test_transition_returns_the_session_as_it_now_stands(world: World) -> None:
    session = await world.session()
    world.clock.advance(2)

    moved = await world.store.transition_session(session.id, SessionState.WAITING_FOR_INPUT)

    assert moved is not None
    assert moved == await world.store.get_session(session.id)
    assert moved.state is SessionState.WAITING_FOR_INPUT and moved.updated_at == world.clock.now()
    assert await world.store.transition_session(session.id, SessionState.COMPLETED) is not None
    # From a terminal state nothing moves, and nothing comes back.
    assert await world.store.transition_session(session.id, SessionState.RUNNING) is None


async def _reserved_successor(world: World) -> tuple[Session, Turn, list[str]]:
    """An idle session whose detached answer `p` holds a reserved successor turn."""
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, pending_id="p")
    claimed = (await world.answer("p", "db")).claimed
    await world.store.transition_session(session.id, SessionState.IDLE)
    ids = [m.id for m in claimed]
    turn = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=ids
    )
    return session, turn, ids


async def test_publish_successor_can_move_the_session_in_the_same_transaction(
    world: World,
) -> None:
    session, turn, ids = await _reserved_successor(world)
    world.clock.advance(3)

    written = await world.store.publish_successor(
        turn.id, DELIVER, pending_id="p", message_ids=ids, session_state=SessionState.RUNNING
    )

    after = await world.store.get_session(session.id)
    assert after.state is SessionState.RUNNING and after.updated_at == world.clock.now()
    assert written is not None and written.session == after
    assert [r.id for r in written.rows] == ids
    assert all("response_delivery_pending" not in r.metadata for r in written.rows)


async def test_a_refused_publication_leaves_the_session_alone(world: World) -> None:
    session, turn, ids = await _reserved_successor(world)

    assert (
        await world.store.publish_successor(
            turn.id,
            DELIVER,
            pending_id="other",
            message_ids=ids,
            session_state=SessionState.RUNNING,
        )
        is None
    )

    assert (await world.store.get_session(session.id)).state is SessionState.IDLE
