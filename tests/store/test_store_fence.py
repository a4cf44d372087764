"""The ownership fence (cluster mode, so PostgreSQL only: cluster mode refuses SQLite).

Every session write reads the session's owner in the statement that locks it: a replica whose
sessions another replica adopted writes nothing more to them, stops itself (`on_lost`) before
the refusal reaches its caller, and an adoption waits for the owner's write in flight rather
than slipping in under it. Creating a session holds the creator's own `clarion_replicas` row
FOR KEY SHARE: an adopter deletes that row, so a creation either commits first (and is adopted
too) or is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import text

from clarion.domain.models import Session
from clarion.domain.scope import SessionScope
from clarion.domain.turn_outcomes import TurnOutcome
from clarion.runtime.clock import ManualClock
from clarion.store.db.owner_fence import FencedOut, OwnerFence
from tests.store.conftest import World, until_a_backend_waits_on_a_lock
from tests.whole_store import WholeStore, open_whole_store

pytestmark = pytest.mark.postgres
CEILING_S = 60.0  # a ceiling for waits, never a delay


@pytest.fixture
def db_kind() -> str:
    return "postgres"


@pytest.fixture
async def other(store_url: str, clock: ManualClock) -> AsyncIterator[WholeStore]:
    """A second replica's store on the same database (the adopter)."""
    async with open_whole_store(store_url, clock) as opened:
        yield opened


class Lost:
    """A fence's `on_lost`, recording each call in `events`, which the test shares."""

    def __init__(self, events: list[tuple[str, str]]) -> None:
        self.events = events

    def __call__(self, reason: str) -> None:
        self.events.append(("stopped", reason))


async def _register(store: WholeStore, replica_id: str) -> None:
    """A row for `replica_id` in clarion_replicas, as `Membership.register` writes it. Nobody
    holds the replica's liveness lock, so any survivor may adopt it."""
    async with store.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO clarion_replicas (id, advertise_url, host, pid, role, sessions, "
                "heartbeats, started_at, last_seen_at) "
                "VALUES (:id, 'http://a', 'host', 1, 'active', 0, 0, now(), now())"
            ),
            {"id": replica_id},
        )


async def _replica_a(world: World) -> list[tuple[str, str]]:
    """Fence the world's store as replica-a (registered); the fence's calls and refusals."""
    events: list[tuple[str, str]] = []
    await _register(world.store, "replica-a")
    world.store.own_sessions(OwnerFence("replica-a", Lost(events)))
    return events


async def _refused(events: list[tuple[str, str]], write: Awaitable[Any], match: str) -> None:
    """`write` raises FencedOut matching `match`, and `on_lost` ran first with its reason."""
    with pytest.raises(FencedOut, match=match) as refused:
        await write
    events.append(("refused", str(refused.value)))
    assert events[-2:] == [("stopped", str(refused.value)), ("refused", str(refused.value))]


def _pause_after(
    monkeypatch: pytest.MonkeyPatch, target: object, name: str
) -> tuple[asyncio.Event, asyncio.Event]:
    """The first call of `target.name` pauses once it has returned, inside its transaction,
    until `release` is set; `reached` is set when it pauses. Later calls run through."""
    original: Callable[..., Awaitable[Any]] = getattr(target, name)
    reached, release = asyncio.Event(), asyncio.Event()

    async def paused(*args: Any) -> Any:
        result = await original(*args)
        if not reached.is_set():
            reached.set()
            await release.wait()
        return result

    monkeypatch.setattr(target, name, paused)
    return reached, release


async def _contents(store: WholeStore, session_id: str) -> list[str]:
    return [m.content for m in (await store.list_messages(session_id)).messages]


async def test_a_write_to_a_session_another_replica_adopted_is_refused_after_stopping_the_replica(
    world: World, other: WholeStore
) -> None:
    events = await _replica_a(world)
    session = await world.session()
    await world.turn(session)
    await world.say(session, "mine")

    assert await other.adopt_replica("replica-b", "replica-a") == [session.id]
    await _refused(events, world.say(session, "not mine any more"), "belongs to replica replica-b")

    assert await _contents(other, session.id) == ["mine"]
    assert (await world.owners())[session.id] == "replica-b"


async def test_a_multi_session_write_to_adopted_sessions_is_refused_and_writes_nothing(
    world: World, other: WholeStore
) -> None:
    events = await _replica_a(world)
    first, second = await world.session(), await world.session()
    await world.turn(first)
    await world.turn(second)

    assert await other.adopt_replica("replica-b", "replica-a") == sorted([first.id, second.id])
    await _refused(
        events,
        world.store.complete_open_turns(outcome=TurnOutcome.INTERRUPTED),
        "belongs to replica replica-b",
    )

    open_turns = await other.list_open_turns()
    assert sorted(t.session_id for t in open_turns) == sorted([first.id, second.id])
    assert [e for e, _ in events] == ["stopped", "refused"]


async def test_a_multi_session_write_is_refused_if_any_one_session_is_not_the_replicas(
    world: World,
) -> None:
    """Every session a write locks is checked, not the first only: the last of them (in id
    order) is another replica's here, and nothing is written to the others either."""
    events = await _replica_a(world)
    mine, lost = await world.session(), await world.session()
    assert mine.id < lost.id
    await world.turn(mine)
    await world.turn(lost)
    await world.own(lost.id, "replica-b")

    write = world.store.complete_open_turns(
        outcome=TurnOutcome.INTERRUPTED, scope=SessionScope.only([mine.id, lost.id])
    )
    await _refused(events, write, f"session {lost.id} belongs to replica replica-b")

    open_turns = await world.store.list_open_turns()
    assert sorted(t.session_id for t in open_turns) == sorted([mine.id, lost.id])


async def test_an_adoption_waits_for_the_owners_write_in_flight_and_then_its_next_write_is_refused(
    world: World, other: WholeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = await _replica_a(world)
    session = await world.session()
    await world.turn(session)
    locked, release = _pause_after(monkeypatch, world.store._db, "lock_session")

    in_flight = asyncio.ensure_future(world.say(session, "in flight"))
    await asyncio.wait_for(locked.wait(), CEILING_S)  # it holds the session's locks
    adopting = asyncio.ensure_future(other.adopt_replica("replica-b", "replica-a"))
    await until_a_backend_waits_on_a_lock(world.store, CEILING_S)
    assert not adopting.done()
    release.set()

    await asyncio.wait_for(in_flight, CEILING_S)  # the owner's write in flight commits
    assert await asyncio.wait_for(adopting, CEILING_S) == [session.id]
    await _refused(events, world.say(session, "too late"), "belongs to replica replica-b")
    assert await _contents(other, session.id) == ["in flight"]


async def test_a_session_creation_after_the_replicas_row_was_deleted_is_refused_and_stops_it(
    world: World, other: WholeStore
) -> None:
    """Else the replica, taken for gone, would own a session nobody would ever adopt."""
    events = await _replica_a(world)
    session = await world.session()
    assert await other.adopt_replica("replica-b", "replica-a") == [session.id]

    create = world.store.create_session(task_id=session.task_id, agent="builtin", is_primary=False)
    await _refused(events, create, "replica-a is no longer registered")

    assert [s.id for s in await other.list_sessions(session.task_id)] == [session.id]


async def test_a_creation_in_flight_holds_off_the_adoption_which_then_adopts_the_new_session(
    world: World, other: WholeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = await _replica_a(world)
    existing = await world.session()
    registered, release = _pause_after(monkeypatch, world.store._db, "check_registered")

    creating = asyncio.ensure_future(
        world.store.create_session(task_id=existing.task_id, agent="builtin", is_primary=False)
    )
    await asyncio.wait_for(registered.wait(), CEILING_S)  # the row is held FOR KEY SHARE
    adopting = asyncio.ensure_future(other.adopt_replica("replica-b", "replica-a"))
    await until_a_backend_waits_on_a_lock(world.store, CEILING_S)
    assert not adopting.done()
    release.set()

    created: Session = await asyncio.wait_for(creating, CEILING_S)
    adopted = await asyncio.wait_for(adopting, CEILING_S)
    assert adopted == sorted([existing.id, created.id])
    owners = await world.owners()
    assert owners[existing.id] == owners[created.id] == "replica-b"
    assert events == []  # the creation committed before the adoption: nothing was refused


async def test_a_store_that_never_called_own_sessions_is_never_fenced(
    world: World, other: WholeStore
) -> None:
    """Single mode: no replica row, and its writes ignore who owns the session."""
    session = await world.session()
    await world.turn(session)
    assert await other.adopt_orphans("replica-b") == [session.id]

    await world.say(session, "single mode")
    await world.store.create_session(task_id=session.task_id, agent="builtin", is_primary=False)

    assert await _contents(world.store, session.id) == ["single mode"]
    assert len(await world.store.list_sessions(session.task_id)) == 2
    assert (await world.owners())[session.id] == "replica-b"
