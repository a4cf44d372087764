"""Round trips on PostgreSQL, where each statement is one: the writes of every ask -> answer
cycle spend no statement they do not need (SQLite runs these below SQLAlchemy, where its
statement events do not see them)."""

from __future__ import annotations

import pytest

from clarion.domain.models import SessionState

from .conftest import World, statements_run, transaction_control_sent

pytestmark = pytest.mark.postgres


@pytest.fixture
def db_kind() -> str:
    return "postgres"


def _kinds(statements: list[str]) -> list[str]:
    """The statements' verbs, leaving out the transaction's own BEGIN and COMMIT."""
    return [s.split(" ")[0] for s in statements if not s.startswith(("BEGIN", "COMMIT"))]


async def test_a_session_move_that_applies_is_one_statement_returning_the_session(
    world: World,
) -> None:
    session = await world.session()
    world.clock.advance(1)
    with statements_run(world.store) as seen:
        moved = await world.store.transition_session(session.id, SessionState.RUNNING)
    assert moved is not None
    assert (moved.state, moved.updated_at) == (SessionState.RUNNING, world.clock.now())
    assert moved == await world.store.get_session(session.id)
    assert _kinds(seen) == ["UPDATE"], seen


async def test_a_session_move_spends_no_begin_or_commit(world: World) -> None:
    """One guarded UPDATE (and, when it matched nothing, one read) needs no transaction
    around it: two round trips fewer than BEGIN ... COMMIT."""
    session = await world.session()
    with transaction_control_sent(world.store) as control:
        assert await world.store.transition_session(session.id, SessionState.RUNNING)
        assert await world.store.transition_session(session.id, SessionState.RUNNING)
    assert control == [], control


async def test_a_write_that_takes_the_session_lock_keeps_its_transaction(world: World) -> None:
    """The other side of the one above, and proof that BEGIN and COMMIT are seen: a question's
    lock, rows and move are one transaction."""
    session = await world.session()
    turn = await world.turn(session)
    with transaction_control_sent(world.store) as control:
        await world.write_bundle(
            session, ("a",), turn_id=turn.id, session_state=SessionState.WAITING_FOR_INPUT
        )
    assert control == ["BEGIN", "COMMIT"], control


async def test_a_summary_compare_and_set_is_one_statement_and_no_transaction(
    world: World,
) -> None:
    session = await world.session()
    first = await world.store.cas_summary(session.task_id, expected_revision=None, data={"a": 1})
    assert first is not None
    with transaction_control_sent(world.store) as control, statements_run(world.store) as seen:
        second = await world.store.cas_summary(
            session.task_id, expected_revision=first.revision, data={"a": 2}
        )
        lost = await world.store.cas_summary(
            session.task_id, expected_revision=first.revision, data={"a": 3}
        )
    assert second is not None and second.revision == first.revision + 1
    assert lost is None
    assert _kinds(seen) == ["UPDATE", "UPDATE"], seen
    assert control == [], control
    stored = await world.store.find_summary(session.task_id)
    assert stored is not None and stored.data == {"a": 2}


async def test_a_move_to_the_state_it_is_in_reads_the_session_once_and_writes_nothing(
    world: World,
) -> None:
    session = await world.session()
    await world.store.transition_session(session.id, SessionState.RUNNING)
    with statements_run(world.store) as seen:
        again = await world.store.transition_session(session.id, SessionState.RUNNING)
    assert again is not None and again.state is SessionState.RUNNING
    assert _kinds(seen) == ["UPDATE", "SELECT"], seen


async def test_a_task_summarys_inputs_are_one_statement_outside_a_transaction(
    world: World,
) -> None:
    asking = await world.session()
    await world.turn(asking)
    await world.bundle(asking)
    with statements_run(world.store) as seen:
        inputs = await world.store.summary_inputs(asking.task_id)
    assert [s.id for s in inputs.sessions] == [asking.id]
    assert inputs.actions == {asking.id: "clarification"}
    # The summary, the sessions with their current turns and their pending actions.
    assert [s.split(" ")[0] for s in seen] == ["SELECT"], seen


async def test_a_question_is_the_lock_one_read_the_rows_and_the_session_move(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session)
    with statements_run(world.store) as seen:
        await world.write_bundle(
            session, ("a", "b"), turn_id=turn.id, session_state=SessionState.WAITING_FOR_INPUT
        )
    # The session lock; the task, the turn's session and the pending id's use; two rows; the move.
    assert _kinds(seen) == ["WITH", "SELECT", "INSERT", "INSERT", "UPDATE"], seen


async def test_a_claim_reads_the_session_the_bundle_and_what_it_may_take_in_one_statement(
    world: World,
) -> None:
    session = await world.session()
    await world.turn(session)
    [row] = await world.bundle(session, ("x",))
    with statements_run(world.store) as seen:
        result = await world.answer(str(row.metadata["pending_id"]), "x")
    assert [r.id for r in result.claimed] == [row.id]
    # The lock by pending id; the session and the rows with their claimability; the claim.
    assert _kinds(seen) == ["WITH", "SELECT", "UPDATE"], seen


async def test_a_bundle_is_read_with_its_session_in_one_statement_outside_a_transaction(
    world: World,
) -> None:
    """What a detached answer, a resend and the projections read first: the rows, their
    session and its current turn, one round trip (it was BEGIN, two reads and COMMIT)."""
    session = await world.session()
    turn = await world.turn(session)
    rows = await world.bundle(session, ("a", "b"))
    with transaction_control_sent(world.store) as control, statements_run(world.store) as seen:
        bundle = await world.store.find_bundle(str(rows[0].pending_id))
        missing = await world.store.find_bundle("no-such-bundle")
    assert bundle is not None and missing is None
    assert ([r.id for r in bundle.rows], bundle.current_turn_id) == ([r.id for r in rows], turn.id)
    assert _kinds(seen) == ["SELECT", "SELECT"], seen
    assert control == [], control


async def test_a_turn_write_finds_and_locks_its_session_in_one_statement(world: World) -> None:
    """Completing a turn: the lock found by the turn id, the turn read under it, the update
    (the turn was read once before the lock, and once more after it)."""
    session = await world.session()
    turn = await world.turn(session)
    with statements_run(world.store) as seen:
        assert await world.store.complete_turn(turn.id)
    assert _kinds(seen) == ["WITH", "SELECT", "UPDATE"], seen
    with statements_run(world.store) as seen:
        assert not await world.store.complete_turn(turn.id)  # completed already: no write
        assert not await world.store.complete_turn("no-such-turn")
    assert _kinds(seen) == ["WITH", "SELECT", "WITH"], seen


async def test_the_current_turn_is_one_statement_outside_a_transaction(world: World) -> None:
    session = await world.session()
    assert await world.store.find_current_turn(session.id) is None
    turn = await world.turn(session)
    with transaction_control_sent(world.store) as control, statements_run(world.store) as seen:
        found = await world.store.find_current_turn(session.id)
    assert found == turn
    assert _kinds(seen) == ["SELECT"], seen
    assert control == [], control


async def test_a_successor_reservation_reads_the_session_and_its_current_turn_at_once(
    world: World,
) -> None:
    session = await world.session()
    turn = await world.turn(session)
    [row] = await world.bundle(session, ("q",))
    with statements_run(world.store) as seen:
        await world.store.reserve_successor(
            session.id,
            source_turn_id=turn.id,
            pending_id=str(row.pending_id),
            message_ids=[row.id],
        )
    # The lock; the session with its current turn; no live reservation; the new turn.
    assert _kinds(seen) == ["WITH", "SELECT", "SELECT", "INSERT"], seen
