"""How the store is built: one implementation per call, one object per port with that port's
calls alone, every call finished despite a cancelled caller."""

from __future__ import annotations

import asyncio
import inspect
import typing

from clarion.domain.models import MetaKey
from clarion.ports.ownership import OwnerFence
from clarion.store import Stores
from tests.whole_store import WholeStore

from .conftest import World

# The objects no protocol declares: the answer links' secret (the composition root's own
# read) and the contract tests' probes.
UNDECLARED = {"link_secret", "probes"}


def _public_coroutines(part: object) -> dict[str, object]:
    return {
        name: member
        for name, member in inspect.getmembers(part, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }


def _public(port: object) -> set[str]:
    return {name for name in dir(port) if not name.startswith("_")}


def _declared(protocol: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(protocol)
        if not name.startswith("_") and callable(member)
    }


async def test_every_public_call_of_every_part_is_bound_shielded_by_some_port(
    store: WholeStore,
) -> None:
    bound: dict[object, list[str]] = {}
    for name, port in store.stores.all().items():
        if name == "slack":
            continue
        for attr, call in vars(port).items():
            if attr == "own_sessions" or attr.startswith("_") or not callable(call):
                continue
            assert getattr(call, "finishes_despite_cancellation", False), (name, attr)
            bound.setdefault(call.__wrapped__, []).append(name)
    for part in store._parts.all():
        for attr, method in _public_coroutines(part).items():
            assert method in bound, f"{type(part).__name__}.{attr} is bound by no port"


async def test_each_ports_object_has_its_ports_calls_and_no_other(store: WholeStore) -> None:
    hints = typing.get_type_hints(Stores)
    for name, port in store.stores.all().items():
        if name in UNDECLARED:
            continue
        assert _public(port) == _declared(hints[name]), name


async def test_no_part_inherits_from_another(store: WholeStore) -> None:
    parts = store._parts.all()
    for part in parts:
        assert type(part).__bases__ == (object,), type(part).__name__
    assert len({type(part) for part in parts}) == len(parts)


async def test_a_call_whose_caller_was_cancelled_still_commits(world: World) -> None:
    session = await world.session()
    call = asyncio.ensure_future(world.store.remember_acp_session(session.id, "acp-1"))
    await asyncio.sleep(0)
    call.cancel()
    await world.store._drain()
    stored = await world.store.get_session(session.id)
    assert stored.metadata.get(MetaKey.ACP_SESSION_ID) == "acp-1"


async def test_the_fence_a_replica_sets_is_the_one_every_part_writes_through(
    store: WholeStore,
) -> None:
    fence = OwnerFence("replica-1", on_lost=lambda _reason: None)
    store.stores.ownership.own_sessions(fence)
    assert store._db.fence is fence
