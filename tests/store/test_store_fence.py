"""The leadership fence (cluster mode, so PostgreSQL only: cluster mode refuses SQLite).

A replica that takes over claims the next leadership epoch; a store fenced with an older one
writes nothing more to any session, stops its replica first, and a takeover waits for the old
leader's write in flight rather than slipping in under it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from clarion.clock import ManualClock
from clarion.ports import NewMessage
from clarion.store import SqlStore, open_store
from clarion.store.fence import FencedOut
from tests.store.conftest import World, until_a_backend_waits_on_a_lock

pytestmark = pytest.mark.postgres
CEILING_S = 60.0  # a ceiling for waits, never a delay


@pytest.fixture
def db_kind() -> str:
    return "postgres"


@pytest.fixture
async def other(store_url: str, clock: ManualClock) -> AsyncIterator[SqlStore]:
    """A second replica's store on the same database."""
    async with open_store(store_url, clock) as opened:
        yield opened


async def _contents(store: SqlStore, session_id: str) -> list[str]:
    return [m.content for m in (await store.list_messages(session_id)).messages]


async def test_a_replica_fenced_by_an_older_epoch_writes_nothing_and_is_stopped_first(
    world: World, other: SqlStore
) -> None:
    stopped: list[str] = []
    session = await world.session()
    await world.turn(session)
    first = await world.store.claim_leadership("replica-a", stopped.append)
    await world.say(session, "before the takeover")

    assert await other.claim_leadership("replica-b", lambda reason: None) == first + 1
    with pytest.raises(FencedOut, match="another replica has taken over"):
        await world.say(session, "after the takeover")

    assert len(stopped) == 1 and f"this replica holds {first}" in stopped[0]
    assert await _contents(other, session.id) == ["before the takeover"]
    await other.add_message(
        NewMessage(session_id=session.id, author_type="agent", type="message", content="new")
    )
    assert await _contents(other, session.id) == ["before the takeover", "new"]


async def test_a_write_to_a_session_another_replica_adopted_is_refused_and_stops_the_replica(
    world: World, other: SqlStore
) -> None:
    stopped: list[str] = []
    session = await world.session()
    await world.turn(session)
    await world.store.claim_leadership("replica-a", stopped.append)
    world.store.own_new_sessions("replica-a")
    assert await world.store.adopt_sessions("replica-a") == [session.id]
    await world.say(session, "mine")

    # Adopted by another replica (which does so only once it takes replica-a for gone); the
    # epoch did not change, so the owner alone refuses, for one session and for many.
    assert await other.adopt_sessions("replica-b") == [session.id]
    with pytest.raises(FencedOut, match="belongs to replica replica-b"):
        await world.say(session, "not mine any more")
    with pytest.raises(FencedOut, match="belongs to replica replica-b"):
        await world.store.complete_open_turns()

    assert len(stopped) == 2
    assert await _contents(other, session.id) == ["mine"]
    assert [t.session_id for t in await other.list_open_turns()] == [session.id]


async def test_a_replica_fenced_by_an_older_epoch_creates_no_session(
    world: World, other: SqlStore
) -> None:
    """Else it would own a session no later check of the epoch's could keep it from."""
    stopped: list[str] = []
    task_id = (await world.session()).task_id
    await world.store.claim_leadership("replica-a", stopped.append)
    await world.store.create_session(task_id=task_id, agent="builtin", is_primary=False)
    await other.claim_leadership("replica-b", lambda reason: None)

    with pytest.raises(FencedOut):
        await world.store.create_session(task_id=task_id, agent="builtin", is_primary=False)

    assert len(stopped) == 1
    assert len(await other.list_sessions(task_id)) == 2


async def test_a_takeover_waits_for_the_old_leaders_write_in_flight(
    world: World, other: SqlStore
) -> None:
    session = await world.session()
    await world.turn(session)
    await world.store.claim_leadership("replica-a", lambda reason: None)
    db = world.store._db
    async with db.write() as conn:
        await db.lock_session(conn, session.id)  # the fence is read FOR SHARE from here on
        claim = asyncio.ensure_future(other.claim_leadership("replica-b", lambda reason: None))
        await until_a_backend_waits_on_a_lock(world.store)
        assert not claim.done()
    # The old leader's transaction ended (committed): only now does the takeover go through.
    await asyncio.wait_for(claim, CEILING_S)
    with pytest.raises(FencedOut):
        await world.say(session, "too late")


async def test_a_store_that_never_claimed_is_not_fenced(world: World, other: SqlStore) -> None:
    """Single mode never claims leadership: its writes do not read the epoch at all."""
    session = await world.session()
    await world.turn(session)
    await other.claim_leadership("replica-b", lambda reason: None)
    await world.say(session, "single mode")
    assert await _contents(world.store, session.id) == ["single mode"]
