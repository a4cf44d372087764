"""Store contract: the current turn, visible history, open turns, and message deletion."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from clarion.domain import turns as rules
from clarion.domain.errors import NotFound
from clarion.domain.models import MetaKey
from clarion.domain.turn_outcomes import TurnEnd, TurnOutcome
from clarion.store.db.schema import task_session_messages

from .conftest import World


async def _referenced_ids(world: World) -> set[str]:
    async with world.store.engine.connect() as conn:
        rows = await conn.execute(select(task_session_messages.c.turn_id))
        return {str(r[0]) for r in rows if r[0] is not None}


async def _agrees_with_domain_rule(world: World, session_id: str) -> None:
    """The SQL rule and the pure domain rule pick the same turn."""
    async with world.store.engine.connect() as conn:
        from clarion.store.db.row_conversion import to_turn
        from clarion.store.db.schema import task_session_turns as t

        turns = [
            to_turn(r)
            for r in await conn.execute(select(t).where(t.c.task_session_id == session_id))
        ]
    expected = rules.current_turn(turns, await _referenced_ids(world))
    current = await world.store.find_current_turn(session_id)
    assert (current.id if current else None) == (expected.id if expected else None)


async def test_newest_started_turn_is_current(world: World) -> None:
    session = await world.session()
    first = await world.turn(session)
    await world.store.complete_turn(first.id)
    second = await world.turn(session)
    await world.store.complete_turn(second.id)
    assert (await world.store.find_current_turn(session.id)).id == second.id  # type: ignore[union-attr]
    await _agrees_with_domain_rule(world, session.id)


async def test_session_without_turns_has_no_current_turn(world: World) -> None:
    session = await world.session()
    assert await world.store.find_current_turn(session.id) is None


async def test_lifecycle_turns_are_never_current_however_recent(world: World) -> None:
    session = await world.session()
    conversational = await world.turn(session)
    await world.store.complete_turn(conversational.id)
    lifecycle = await world.turn(session, lifecycle_only=True)
    assert lifecycle.metadata[MetaKey.LIFECYCLE_ONLY] is True
    assert (await world.store.find_current_turn(session.id)).id == conversational.id  # type: ignore[union-attr]
    await _agrees_with_domain_rule(world, session.id)


async def test_open_turn_beats_completed_turn_regardless_of_timestamps(world: World) -> None:
    session = await world.session()
    open_turn = await world.turn(session)
    newer = await world.turn(session, advance=60)
    await world.store.complete_turn(newer.id)
    assert (await world.store.find_current_turn(session.id)).id == open_turn.id  # type: ignore[union-attr]
    await _agrees_with_domain_rule(world, session.id)


async def test_equal_started_at_ties_break_by_created_at_then_id(world: World) -> None:
    session = await world.session()
    a = await world.turn(session, advance=0)
    b = await world.turn(session, advance=0)
    assert a.started_at == b.started_at
    assert a.created_at == b.created_at
    assert a.id < b.id
    assert (await world.store.find_current_turn(session.id)).id == b.id  # type: ignore[union-attr]
    # created_at decides before id: give the lower id the later created_at.
    async with world.store.engine.begin() as conn:
        from sqlalchemy import update

        from clarion.store.db.schema import task_session_turns as t

        await conn.execute(
            update(t)
            .where(t.c.id == a.id)
            .values(created_at=a.created_at + timedelta(microseconds=1))
        )
    assert (await world.store.find_current_turn(session.id)).id == a.id  # type: ignore[union-attr]
    await _agrees_with_domain_rule(world, session.id)


async def test_microsecond_apart_turns_order_correctly(world: World) -> None:
    session = await world.session()
    first = await world.turn(session, advance=0)
    world.clock.advance(0.000001)
    second = await world.store.create_turn(session.id)
    assert second.started_at - first.started_at == timedelta(microseconds=1)
    # A later id on the first one must not matter: started_at decides.
    assert (await world.store.find_current_turn(session.id)).id == second.id  # type: ignore[union-attr]
    history = await world.store.list_visible_turns(session.id)
    assert [t.id for t in history] == [first.id, second.id]
    assert history[1].started_at == second.started_at


async def test_empty_reservation_is_not_authority(world: World) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, pending_id="p")
    claimed = (await world.answer("p", "db")).claimed
    world.clock.advance(5)
    await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    assert (await world.store.find_current_turn(session.id)).id == source.id  # type: ignore[union-attr]
    await _agrees_with_domain_rule(world, session.id)


async def test_attempted_reservation_is_authority(world: World) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, pending_id="p")
    claimed = (await world.answer("p", "db")).claimed
    world.clock.advance(5)
    successor = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    assert await world.store.mark_attempted(successor.id)
    assert (await world.store.find_current_turn(session.id)).id == successor.id  # type: ignore[union-attr]
    await _agrees_with_domain_rule(world, session.id)


async def test_referenced_reservation_is_authority(world: World) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, pending_id="p")
    claimed = (await world.answer("p", "db")).claimed
    world.clock.advance(5)
    successor = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    await world.say(session, "agent output", turn_id=successor.id)
    assert (await world.store.find_current_turn(session.id)).id == successor.id  # type: ignore[union-attr]
    await _agrees_with_domain_rule(world, session.id)


async def test_deleting_messages_never_moves_ownership_back(world: World) -> None:
    session = await world.session()
    first = await world.turn(session)
    await world.bundle(session, pending_id="p")
    second = await world.turn(session)
    message = await world.say(session, "only message of the newest turn")
    assert message.turn_id == second.id
    deleted = await world.store.delete_message(session.id, message.id)
    assert deleted is not None
    assert deleted.id == message.id
    assert (await world.store.find_current_turn(session.id)).id == second.id  # type: ignore[union-attr]
    assert await world.store.list_active_bundle_ids(session.id) == []
    assert [t.id for t in await world.store.list_visible_turns(session.id)] == [first.id, second.id]
    assert await world.store.delete_message(session.id, message.id) is None


async def test_deleting_the_evidence_of_a_reservation_keeps_it_authoritative(
    world: World,
) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.bundle(session, pending_id="p")
    claimed = (await world.answer("p", "db")).claimed
    world.clock.advance(5)
    successor = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    evidence = await world.say(session, "agent output", turn_id=successor.id)
    await world.store.delete_message(session.id, evidence.id)
    assert (await world.store.find_current_turn(session.id)).id == successor.id  # type: ignore[union-attr]


async def test_visible_history_hides_unpublished_reservations_even_when_attempted(
    world: World,
) -> None:
    session = await world.session()
    source = await world.turn(session)
    await world.store.complete_turn(source.id)
    lifecycle = await world.turn(session, lifecycle_only=True)
    await world.bundle(session, pending_id="p", turn_id=source.id)
    claimed = (await world.answer("p", "db")).claimed
    successor = await world.store.reserve_successor(
        session.id, source_turn_id=source.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    await world.store.mark_attempted(successor.id)
    history = await world.store.list_visible_turns(session.id)
    assert [t.id for t in history] == [source.id, lifecycle.id]
    await world.say(session, "evidence", turn_id=successor.id)
    history = await world.store.list_visible_turns(session.id)
    assert [t.id for t in history] == [source.id, lifecycle.id, successor.id]
    assert not any(
        k in history[2].metadata
        for k in (
            "prompt_dispatch_pending",
            "prompt_dispatch_attempted",
            "prompt_dispatch_clarification_message_ids",
        )
    )


async def test_visible_history_is_ascending_and_strips_private_keys(world: World) -> None:
    session = await world.session()
    later = await world.turn(
        session, advance=10, metadata={"prompt_dispatch_start_event_pending": True, "x": 1}
    )
    earlier = await world.turn(session, advance=-5)
    history = await world.store.list_visible_turns(session.id)
    assert [t.id for t in history] == [earlier.id, later.id]
    assert history[1].metadata == {"x": 1}


async def test_complete_turn_applies_once_and_merges_the_patch(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session, metadata={"a": 1})
    world.clock.advance(3)
    assert await world.store.complete_turn(turn.id, end=TurnEnd(outcome=TurnOutcome.INTERRUPTED))
    assert not await world.store.complete_turn(turn.id)
    stored = await world.store.get_turn(turn.id)
    assert stored.completed_at == world.clock.now()
    assert stored.metadata == {"a": 1, "interrupted": True}


async def test_list_open_turns_spans_sessions_and_skips_empty_reservations(world: World) -> None:
    s1 = await world.session()
    s2 = await world.session()
    open1 = await world.turn(s1)
    done = await world.turn(s2)
    await world.store.complete_turn(done.id)
    await world.bundle(s2, pending_id="p")
    claimed = (await world.answer("p", "db")).claimed
    await world.store.reserve_successor(
        s2.id, source_turn_id=done.id, pending_id="p", message_ids=[m.id for m in claimed]
    )
    assert [t.id for t in await world.store.list_open_turns()] == [open1.id]


async def test_session_with_current_turn_reads_both_at_once(world: World) -> None:
    session = await world.session()
    assert await world.store.session_with_current_turn(session.id) == (session, None)
    first = await world.turn(session)
    await world.store.complete_turn(first.id)
    second = await world.turn(session)

    found, turn_id = await world.store.session_with_current_turn(session.id)

    assert found == await world.store.get_session(session.id)
    assert turn_id == second.id == (await world.store.find_current_turn(session.id)).id  # type: ignore[union-attr]
    with pytest.raises(NotFound):
        await world.store.session_with_current_turn("missing")
