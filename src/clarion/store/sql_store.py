"""SqlStore: the store on SQLAlchemy Core, for SQLite and PostgreSQL alike: the opened
database, and the one object per port it hands out (`SqlStore.stores`, stores.py).

Imported by the composition root (through `clarion.store`), the CLI's database commands and the
store tests. It owns the engine's connections and the calls in flight; each port's object
(`AnswerCalls`, `TurnCalls`, ...) has its port's calls alone, so a service given one cannot
reach another port's calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncEngine

from clarion.ports import Clock
from clarion.store.db.engine import Db, open_engine
from clarion.store.db.migrations import migrate
from clarion.store.db.schema_status import require_current
from clarion.store.outbox import Outbox, OutboxWriter
from clarion.store.shielding import InFlight
from clarion.store.stores import Parts, Stores


class SqlStore:
    """Every call of every port's object is one transaction, finished despite a cancelled
    caller. Writes that touch a session's turns or clarification rows hold that session's
    write lock for the whole transaction."""

    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = db = Db(engine)
        self._clock = clock
        self._outbox = outbox = OutboxWriter()
        self._inflight = InFlight(outbox.after_call)
        self._parts = Parts.over(db, clock, outbox)
        self.stores = Stores.over(self._parts, db, clock, self._inflight)

    def configure_outbox(self, outbox: Outbox) -> None:
        """Which events to queue for which webhook, email and Slack channel (set once, by the
        composition root)."""
        self._outbox.configure(outbox)

    async def _drain(self, within: float = 10.0) -> None:
        """Wait for transactions whose callers were cancelled, before the engine closes."""
        await self._inflight.drain(within)

    def close(self) -> None:
        """Close the store's own connections; the engine stays its opener's to dispose."""
        self._db.close()

    @property
    def engine(self) -> AsyncEngine:
        return self._db.engine

    @property
    def dialect(self) -> str:
        return self._db.engine.dialect.name


@asynccontextmanager
async def open_store(
    url: str, clock: Clock, *, migrate_schema: bool = True
) -> AsyncIterator[SqlStore]:
    """Open the database at `url`, migrate it to the latest schema, and dispose on exit.
    Without `migrate_schema`, SchemaBehind if it needs migrations."""
    engine = open_engine(url)
    try:
        if migrate_schema:
            await migrate(engine)
        else:
            await require_current(engine)
        store = SqlStore(engine, clock)
        try:
            yield store
        finally:
            await store._drain()
            store.close()
    finally:
        await engine.dispose()
