"""How SqlStore is built: one implementation per port, every public call of every part exposed
by the store and finished despite a cancelled caller."""

from __future__ import annotations

import asyncio
import inspect

from clarion.domain.models import MetaKey
from clarion.ports import Store
from clarion.store import SqlStore
from clarion.store.db.owner_fence import OwnerFence

from .conftest import World


def _public_coroutines(part: object) -> dict[str, object]:
    return {
        name: member
        for name, member in inspect.getmembers(part, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }


async def test_every_public_call_of_every_part_is_the_stores_own_and_shielded(
    store: SqlStore,
) -> None:
    exposed = 0
    for part in store._parts:
        for name, method in _public_coroutines(part).items():
            bound = getattr(store, name)
            assert getattr(bound, "finishes_despite_cancellation", False), name
            assert bound.__wrapped__ == method, name
            exposed += 1
    public = _public_coroutines(store)
    assert exposed == len(public)
    assert all(getattr(call, "finishes_despite_cancellation", False) for call in public.values())


async def test_the_store_has_every_call_of_the_store_port(store: SqlStore) -> None:
    wanted = {
        name
        for name, member in inspect.getmembers(Store, inspect.isfunction)
        if not name.startswith("_")
    }
    assert wanted <= set(_public_coroutines(store))


async def test_no_part_inherits_from_another(store: SqlStore) -> None:
    for part in store._parts:
        assert type(part).__bases__ == (object,), type(part).__name__
    assert len({type(part) for part in store._parts}) == len(store._parts)


async def test_a_call_whose_caller_was_cancelled_still_commits(world: World) -> None:
    session = await world.session()
    call = asyncio.ensure_future(world.store.remember_acp_session(session.id, "acp-1"))
    await asyncio.sleep(0)
    call.cancel()
    await world.store._drain()
    stored = await world.store.get_session(session.id)
    assert stored.metadata.get(MetaKey.ACP_SESSION_ID) == "acp-1"


async def test_the_fence_a_replica_sets_is_the_one_every_part_writes_through(
    store: SqlStore,
) -> None:
    fence = OwnerFence("replica-1", on_lost=lambda _reason: None)
    store.own_sessions(fence)
    assert store._db.fence is fence
