"""Store contract: the truthy rule for metadata flags, identical in SQL on every backend and
in the pure domain rule."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from clarion.domain import lifecycle
from clarion.domain.flags import is_truthy
from clarion.store.db.portable_sql import flag, meta_text
from clarion.store.db.schema import task_session_turns as turns

from .conftest import World

ENCODINGS: list[tuple[Any, bool]] = [
    (True, True),
    ("true", True),
    ("1", True),
    (1, True),
    (False, False),
    ("false", False),
    (0, False),
    ("0", False),
    (2, False),
    (1.0, False),
    ("", False),
    (None, False),
    ("yes", False),
    ("TRUE", False),
    (" true", False),
    ([1], False),
    ({"a": 1}, False),
]


async def test_flag_expression_matches_the_domain_rule_for_every_encoding(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session)
    for value, expected in ENCODINGS:
        await world.raw_turn_metadata(turn.id, {"k": value})
        async with world.store.engine.connect() as conn:
            got = (
                await conn.execute(select(flag(turns.c.metadata, "k")).where(turns.c.id == turn.id))
            ).scalar()
        assert bool(got) is expected, value
        assert is_truthy(value) is expected, value


async def test_missing_flag_key_is_off(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session)
    async with world.store.engine.connect() as conn:
        got = (
            await conn.execute(
                select(flag(turns.c.metadata, "absent")).where(turns.c.id == turn.id)
            )
        ).scalar()
    assert not got


async def test_meta_text_reads_missing_keys_as_empty_text(world: World) -> None:
    session = await world.session()
    turn = await world.turn(session, metadata={"s": "pending"})
    async with world.store.engine.connect() as conn:
        row = (
            await conn.execute(
                select(meta_text(turns.c.metadata, "s"), meta_text(turns.c.metadata, "none")).where(
                    turns.c.id == turn.id
                )
            )
        ).one()
    assert tuple(row) == ("pending", "")


@pytest.mark.parametrize("value", [True, "true", "1", 1])
async def test_every_truthy_encoding_of_lifecycle_only_excludes_the_turn(
    world: World, value: Any
) -> None:
    session = await world.session()
    conversational = await world.turn(session)
    lifecycle = await world.turn(session)
    await world.raw_turn_metadata(lifecycle.id, {"lifecycle_only": value})
    current = await world.store.find_current_turn(session.id)
    assert current is not None
    assert current.id == conversational.id


@pytest.mark.parametrize("value", [False, "false", "0", 0, 1.0])
async def test_falsy_encodings_of_lifecycle_only_keep_the_turn_conversational(
    world: World, value: Any
) -> None:
    session = await world.session()
    await world.turn(session)
    newer = await world.turn(session)
    await world.raw_turn_metadata(newer.id, {"lifecycle_only": value})
    current = await world.store.find_current_turn(session.id)
    assert current is not None
    assert current.id == newer.id


@pytest.mark.parametrize("value", [True, "true", "1", 1])
async def test_every_truthy_encoding_of_parent_question_hides_the_row(
    world: World, value: Any
) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, pending_id="p")
    await world.raw_message_metadata(rows[0].id, {**rows[0].metadata, "parent_question": value})
    assert await world.store.list_active_bundle_ids(session.id) == []
    assert await world.store.find_bundle("p") is None


@pytest.mark.parametrize("value", [True, "true", "1", 1])
async def test_every_truthy_encoding_of_agent_disconnected_counts_as_detached(
    world: World, value: Any
) -> None:
    session = await world.session()
    await world.turn(session)
    rows = await world.bundle(session, pending_id="p")
    await world.raw_message_metadata(rows[0].id, {**rows[0].metadata, "agent_disconnected": value})
    assert await world.store.transition_session_bundles(session.id, lifecycle.DETACH) == ()
    assert await world.store.list_detachable_bundles() == []


@pytest.mark.parametrize("value", [True, "true", "1", 1])
async def test_every_truthy_encoding_of_dispatch_pending_marks_a_reservation(
    world: World, value: Any
) -> None:
    session = await world.session()
    source = await world.turn(session)
    reservation = await world.turn(session)
    await world.raw_turn_metadata(reservation.id, {"prompt_dispatch_pending": value})
    current = await world.store.find_current_turn(session.id)
    assert current is not None
    assert current.id == source.id
    assert [t.id for t in await world.store.list_visible_turns(session.id)] == [source.id]
    await world.raw_turn_metadata(
        reservation.id, {"prompt_dispatch_pending": value, "prompt_dispatch_attempted": value}
    )
    current = await world.store.find_current_turn(session.id)
    assert current is not None
    assert current.id == reservation.id
