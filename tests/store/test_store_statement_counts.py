"""Round trips on PostgreSQL, where each statement is one: the writes of every ask -> answer
cycle spend no statement they do not need (SQLite runs these below SQLAlchemy, where its
statement events do not see them)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import event

from clarion.domain.models import SessionState
from clarion.store import SqlStore

from .conftest import World

pytestmark = pytest.mark.postgres


@pytest.fixture
def db_kind() -> str:
    return "postgres"


@contextmanager
def _statements(store: SqlStore) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(*args: object) -> None:
        seen.append(" ".join(str(args[2]).split()))

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)


def _kinds(statements: list[str]) -> list[str]:
    """The statements' verbs, leaving out the transaction's own BEGIN and COMMIT."""
    return [s.split(" ")[0] for s in statements if not s.startswith(("BEGIN", "COMMIT"))]


async def test_a_session_move_that_applies_is_one_statement_returning_the_session(
    world: World,
) -> None:
    session = await world.session()
    world.clock.advance(1)
    with _statements(world.store) as seen:
        moved = await world.store.transition_session(session.id, SessionState.RUNNING)
    assert moved is not None
    assert (moved.state, moved.updated_at) == (SessionState.RUNNING, world.clock.now())
    assert moved == await world.store.get_session(session.id)
    assert _kinds(seen) == ["UPDATE"], seen


async def test_a_move_to_the_state_it_is_in_reads_the_session_once_and_writes_nothing(
    world: World,
) -> None:
    session = await world.session()
    await world.store.transition_session(session.id, SessionState.RUNNING)
    with _statements(world.store) as seen:
        again = await world.store.transition_session(session.id, SessionState.RUNNING)
    assert again is not None and again.state is SessionState.RUNNING
    assert _kinds(seen) == ["UPDATE", "SELECT"], seen
