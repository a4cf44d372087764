"""Every port's calls on one object, for tests that look at rows through any of them.

The store hands each port's object out alone (`clarion.store.Stores`); a contract test or a
lifecycle test that writes with one port and reads with another sees them through
`WholeStore`, which finds a call on the first port's object that has it (then on the opened
store itself: its engine, its fence, its drain). No service is ever given one.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, cast

from sqlalchemy.ext.asyncio import AsyncEngine

from clarion.ports import Clock
from clarion.ports.store import (
    AccessStore,
    AnswerStore,
    ArchiveStore,
    DeadlineStore,
    OutboxStore,
    PermissionStore,
    ReadStore,
    RecoveryStore,
    ReviewStore,
    TurnStore,
    WorktreeStore,
)
from clarion.store import SqlStore, Stores, open_store
from clarion.store.db.engine import Db
from clarion.store.stores import Parts


class WholeStore(
    AnswerStore,
    TurnStore,
    RecoveryStore,
    ReadStore,
    AccessStore,
    PermissionStore,
    OutboxStore,
    DeadlineStore,
    WorktreeStore,
    ArchiveStore,
    ReviewStore,
    Protocol,
):
    """What tests type the whole as: the union of the store's ports, typed, and anything else
    the opened store or a port's object has (probes, ownership, the engine) as Any."""

    stores: Stores
    _db: Db
    _parts: Parts

    @property
    def engine(self) -> AsyncEngine: ...

    async def _drain(self, within: float = 10.0) -> None: ...

    def __getattr__(self, name: str) -> Any: ...


class _Whole:
    def __init__(self, stores: Stores, sql: SqlStore | None) -> None:
        self._ports = tuple(stores.all().values())
        self._sql = sql

    def __getattr__(self, name: str) -> Any:
        for port in self._ports:
            found = getattr(port, name, None)
            if found is not None:
                return found
        if self._sql is not None:
            return getattr(self._sql, name)
        raise AttributeError(name)


def whole(sql: SqlStore) -> WholeStore:
    """Every port's calls of the opened store `sql`, then the store's own attributes."""
    return cast(WholeStore, _Whole(sql.stores, sql))


def whole_of(stores: Stores) -> WholeStore:
    """Every port's calls of `stores` (as a build handed them out, wrapped or not)."""
    return cast(WholeStore, _Whole(stores, None))


@contextlib.asynccontextmanager
async def open_whole_store(
    url: str, clock: Clock, *, migrate_schema: bool = True
) -> AsyncIterator[WholeStore]:
    """`clarion.store.open_store`, every port's calls on the one object it yields."""
    async with open_store(url, clock, migrate_schema=migrate_schema) as opened:
        yield whole(opened)


def per_port(stores: Stores, wrap: Callable[[Any], Any]) -> Stores:
    """`stores` with each port's object wrapped (what a build's `store_wrapper` returns)."""
    return dataclasses.replace(stores, **{name: wrap(port) for name, port in stores.all().items()})
