"""`clarion db prune` and the server's retention: delete what finished long ago.

A session is prunable when it ended (COMPLETED, FAILED, CANCELLED) before the cutoff and no
session of its task is still alive: a task with anything waiting or running is never touched,
not even its old finished sessions. Its messages, turns, waiting-policy timers and the session
row go, in batches, one transaction each, the predicate checked again inside the transaction
under the sessions' write locks, so a session that an answer or a new prompt revived between
the listing and the delete is skipped. Tasks themselves stay (a person may still open them);
the outbox's deliveries (every channel's) that were delivered or given up before the cutoff go
too.

Store-internal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy import Select, Table, and_, bindparam, delete, exists, func, or_, select
from sqlalchemy.sql import ColumnElement

from clarion.store.db.engine import Db
from clarion.store.db.predicates import TERMINAL_STATES
from clarion.store.db.schema import (
    clarification_deadlines,
    task_session_messages,
    task_session_turns,
    task_sessions,
    webhook_deliveries,
)


@dataclass(frozen=True, slots=True)
class Pruned:
    """Rows pruned (or counted), by table: the outbox's count keeps its table's name
    (`webhook_deliveries`, every channel's rows), which the retention log line shows."""

    sessions: int = 0
    turns: int = 0
    messages: int = 0
    webhook_deliveries: int = 0

    def __add__(self, other: Pruned) -> Pruned:
        return Pruned(
            self.sessions + other.sessions,
            self.turns + other.turns,
            self.messages + other.messages,
            self.webhook_deliveries + other.webhook_deliveries,
        )


def _prunable(cutoff: ColumnElement[datetime] | datetime) -> ColumnElement[bool]:
    alive = task_sessions.alias("alive")
    return and_(
        task_sessions.c.state.in_(TERMINAL_STATES),
        task_sessions.c.updated_at < cutoff,
        ~exists().where(
            alive.c.task_id == task_sessions.c.task_id, alive.c.state.not_in(TERMINAL_STATES)
        ),
    )


_CANDIDATES = (
    select(task_sessions.c.id).where(_prunable(bindparam("cutoff"))).order_by(task_sessions.c.id)
)
_STILL_PRUNABLE = select(task_sessions.c.id).where(
    task_sessions.c.id.in_(bindparam("ids", expanding=True)), _prunable(bindparam("cutoff"))
)
_FINISHED_DELIVERIES = or_(
    webhook_deliveries.c.delivered_at < bindparam("cutoff"),
    webhook_deliveries.c.gave_up_at < bindparam("cutoff"),
)


def _count(table: Table, column: ColumnElement[str]) -> Select[int]:
    return (
        select(func.count()).select_from(table).where(column.in_(bindparam("ids", expanding=True)))
    )


class SqlRetention:
    """Pruning finished sessions' rows and the outbox's finished deliveries."""

    def __init__(self, db: Db) -> None:
        self._db = db

    async def prunable_sessions(self, cutoff: datetime) -> list[str]:
        """Ids of the sessions a prune at `cutoff` would delete now, in id order. A cluster
        replica's store lists only its own sessions (it may write no other)."""
        query = _CANDIDATES
        if self._db.owner is not None:
            query = query.where(task_sessions.c.owner_replica_id == self._db.owner)
        async with self._db.read() as conn:
            return [str(r.id) for r in await conn.execute(query, {"cutoff": cutoff})]

    async def count_pruned(self, session_ids: Sequence[str]) -> Pruned:
        """What deleting these sessions would delete (a dry run's figures)."""
        if not session_ids:
            return Pruned()
        ids = {"ids": list(session_ids)}
        async with self._db.read() as conn:
            turns = await conn.execute(
                _count(task_session_turns, task_session_turns.c.task_session_id), ids
            )
            n_turns = int(turns.scalar() or 0)
            messages = await conn.execute(
                _count(task_session_messages, task_session_messages.c.task_session_id), ids
            )
            n_messages = int(messages.scalar() or 0)
        return Pruned(len(session_ids), n_turns, n_messages, 0)

    async def prune_sessions(self, session_ids: Sequence[str], cutoff: datetime) -> Pruned:
        """Delete those of `session_ids` that are still prunable at `cutoff`, with their rows,
        in one transaction; what was deleted."""
        if not session_ids:
            return Pruned()
        async with self._db.write() as conn:
            await self._db.lock_sessions(conn, sorted(session_ids))
            rows = await conn.execute(_STILL_PRUNABLE, {"ids": list(session_ids), "cutoff": cutoff})
            ids = [str(r.id) for r in rows]
            if not ids:
                return Pruned()
            await conn.execute(
                delete(clarification_deadlines).where(clarification_deadlines.c.session_id.in_(ids))
            )
            messages = await conn.execute(
                delete(task_session_messages).where(
                    task_session_messages.c.task_session_id.in_(ids)
                )
            )
            turns = await conn.execute(
                delete(task_session_turns).where(task_session_turns.c.task_session_id.in_(ids))
            )
            sessions = await conn.execute(delete(task_sessions).where(task_sessions.c.id.in_(ids)))
        return Pruned(sessions.rowcount, turns.rowcount, messages.rowcount, 0)

    async def prune_deliveries(self, cutoff: datetime, *, dry_run: bool) -> int:
        """Delivered or given-up outbox deliveries older than `cutoff`: deleted (or counted)."""
        if dry_run:
            async with self._db.read() as conn:
                found = await conn.execute(
                    select(func.count())
                    .select_from(webhook_deliveries)
                    .where(_FINISHED_DELIVERIES),
                    {"cutoff": cutoff},
                )
                return int(found.scalar() or 0)
        async with self._db.write() as conn:
            result = await conn.execute(
                delete(webhook_deliveries).where(_FINISHED_DELIVERIES), {"cutoff": cutoff}
            )
            return int(result.rowcount)


class Prunable(Protocol):
    """What `prune` needs: `SqlRetention`'s calls, as the store exposes them."""

    async def prunable_sessions(self, cutoff: datetime) -> list[str]: ...

    async def count_pruned(self, session_ids: Sequence[str]) -> Pruned: ...

    async def prune_sessions(self, session_ids: Sequence[str], cutoff: datetime) -> Pruned: ...

    async def prune_deliveries(self, cutoff: datetime, *, dry_run: bool) -> int: ...


Progress = Callable[[int, int], None]  # (sessions done, sessions in all)
BATCH = 200


async def prune(
    store: Prunable,
    cutoff: datetime,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    batch: int = BATCH,
) -> Pruned:
    """Delete (or, with `dry_run`, count) what finished before `cutoff`, a batch of sessions
    per transaction so a long prune never holds a lock for long; `progress` after each."""
    ids = await store.prunable_sessions(cutoff)
    total = Pruned()
    for start in range(0, len(ids), batch):
        part = ids[start : start + batch]
        if dry_run:
            total += await store.count_pruned(part)
        else:
            total += await store.prune_sessions(part, cutoff)
        if progress is not None:
            progress(min(start + batch, len(ids)), len(ids))
    deliveries = await store.prune_deliveries(cutoff, dry_run=dry_run)
    return total + Pruned(webhook_deliveries=deliveries)
