"""SqlStore: the Store port on SQLAlchemy Core, for SQLite and PostgreSQL alike.

Imported by `clarion.server.wiring` (through `clarion.store`) and the store tests. The queries live
in one mixin per concern; this class only joins them and owns the engine's lifetime.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from clarion.ports import Clock
from clarion.store.agent_stops import AgentStopQueries
from clarion.store.auth import AuthQueries
from clarion.store.clarifications import ClarificationQueries
from clarion.store.db.engine import Db, open_engine
from clarion.store.db.migrations import migrate
from clarion.store.db.schema_status import require_current
from clarion.store.deadlines import DeadlineQueries
from clarion.store.failures import FailureQueries
from clarion.store.figures import FigureQueries
from clarion.store.inbox import InboxQueries
from clarion.store.link_secret import LinkSecretQueries
from clarion.store.messages import MessageQueries
from clarion.store.outbox import OutboxQueries
from clarion.store.ownership import OwnershipQueries
from clarion.store.pending_actions import ProjectionQueries
from clarion.store.permissions import PermissionQueries
from clarion.store.projection_epoch import MetaQueries
from clarion.store.resends import DeliveryQueries
from clarion.store.retention import RetentionQueries
from clarion.store.revisions import RevisionQueries
from clarion.store.startup.intents import IntentRecoveryQueries
from clarion.store.startup.open_turns import OpenTurnQueries
from clarion.store.startup.orphans import OrphanQueries
from clarion.store.startup.reservation_recovery import ReservationRecoveryQueries
from clarion.store.startup.sessions import SessionStateQueries
from clarion.store.startup.start_events import StartEventQueries
from clarion.store.successor_turns import ReservationQueries
from clarion.store.summaries import SummaryQueries
from clarion.store.tasks import TaskQueries
from clarion.store.turns import TurnQueries

T = TypeVar("T")


def _finish_despite_cancellation(
    method: Callable[..., Coroutine[Any, Any, T]],
) -> Callable[..., Coroutine[Any, Any, T]]:
    """Run the transaction in its own task so that a cancelled caller cannot interrupt it
    halfway: an interrupted SQLite transaction could keep the write lock, and a half-done
    guarded update would leave the caller unsure what applied. The caller still sees its
    cancellation at once."""

    @functools.wraps(method)
    async def run(self: SqlStore, *args: Any, **kwargs: Any) -> T:
        task = asyncio.ensure_future(method(self, *args, **kwargs))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        task.add_done_callback(self._after_call)
        return await asyncio.shield(task)

    return run


def _shield_public_methods(cls: type[T]) -> type[T]:
    for name in dir(cls):
        value = getattr(cls, name)
        if not name.startswith("_") and inspect.iscoroutinefunction(value):
            setattr(cls, name, _finish_despite_cancellation(value))
    return cls


@_shield_public_methods
class SqlStore(
    TaskQueries,
    TurnQueries,
    MessageQueries,
    ClarificationQueries,
    DeadlineQueries,
    ReservationQueries,
    DeliveryQueries,
    ProjectionQueries,
    InboxQueries,
    SummaryQueries,
    MetaQueries,
    LinkSecretQueries,
    RevisionQueries,
    ReservationRecoveryQueries,
    IntentRecoveryQueries,
    StartEventQueries,
    OrphanQueries,
    OpenTurnQueries,
    SessionStateQueries,
    AuthQueries,
    PermissionQueries,
    FailureQueries,
    OutboxQueries,
    OwnershipQueries,
    AgentStopQueries,
    FigureQueries,
    RetentionQueries,
):
    """Every method is one transaction. Writes that touch a session's turns or clarification
    rows hold that session's write lock for the whole transaction.

    Implements `clarion.ports.Store`, the union of the consumers' narrow protocols. Four
    methods belong to no port (and `answer_link_secret`, which only the composition root
    reads, at start): `list_open_turns`, `find_live_reservation`, `clear_outbox`
    and `list_detachable_bundles` are probes the store's contract tests use to
    look at rows directly; no service may call them (mypy checks services against the ports)."""

    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = Db(engine)
        self._clock = clock
        self._inflight: set[asyncio.Future[Any]] = set()
        self._outbox_writers = set()

    async def _drain(self, within: float = 10.0) -> None:
        """Wait for transactions whose callers were cancelled, before the engine closes."""
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=within)

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
            store._db.close()
    finally:
        await engine.dispose()
