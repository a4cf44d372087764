"""Cluster mode: which replica a session belongs to, and adopting the sessions of replicas
that are gone.

A session belongs to the replica that runs its agent (`task_sessions.owner_replica_id`,
written when the session is created; null for a single-mode server's sessions). A replica
that takes over adopts, in one guarded update, every session whose owner is neither itself
nor a replica still running, and then recovers exactly those sessions. That condition is the
guard, checked on every row as it is locked and again as it is updated: each session changes
owner once, so of two replicas adopting at the same time each
session goes to exactly one (the second re-reads a row the first changed and finds it owned
by a running replica). The rows are locked in id order, the order every multi-session write
takes its session locks in, so adoption never deadlocks with a write in flight.

Which replicas are still running is either named by the caller or, in a cluster, read from
the replicas' liveness locks inside the adopting statements (liveness.py).

Imported by the SqlStore facade only.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from sqlalchemy import ColumnElement, Select, Update, and_, bindparam, or_, select, update

from clarion.store.liveness import owner_not_running
from clarion.store.rows import StoreBase
from clarion.store.schema import task_sessions

log = logging.getLogger(__name__)

_owner = task_sessions.c.owner_replica_id
_kept = _owner.in_(bindparam("keep", expanding=True))


def _statements(unkept: ColumnElement[bool]) -> tuple[Select[tuple[str, str]], Update]:
    """The locking select and the guarded update, both with one condition: the guard."""
    adoptable = select(task_sessions.c.id, _owner).where(unkept)
    adopt = (
        update(task_sessions)
        .where(task_sessions.c.id.in_(bindparam("ids", expanding=True)), unkept)
        .values(owner_replica_id=bindparam("replica_id"))
        .returning(task_sessions.c.id)
    )
    return adoptable.order_by(task_sessions.c.id).with_for_update(), adopt


# Owned by nobody, or by a replica that is neither the adopter nor named as still running.
_BY_NAME = _statements(or_(_owner.is_(None), ~_kept))
# Owned by nobody, or by a replica that is not the adopter and holds no liveness lock
# (PostgreSQL only: the locks are its advisory locks).
_BY_LOCK = _statements(
    or_(_owner.is_(None), and_(~_kept, owner_not_running("task_sessions.owner_replica_id")))
)
# Bounds the bind parameters of one statement (asyncpg allows 32,767).
_CHUNK = 5000


class OwnershipQueries(StoreBase):
    def own_new_sessions(self, replica_id: str) -> None:
        """Sessions this store creates from now on belong to `replica_id`."""
        self._db.owner = replica_id

    async def adopt_sessions(
        self, replica_id: str, *, still_running: Sequence[str] = ()
    ) -> list[str]:
        """Every session not owned by `replica_id` or a replica in `still_running` becomes
        `replica_id`'s, in one transaction; the ids adopted, sorted. A repeat adopts none."""
        return await self._adopt(replica_id, sorted({replica_id, *still_running}), _BY_NAME)

    async def adopt_sessions_of_stopped_replicas(self, replica_id: str) -> list[str]:
        """Every session whose owner is not `replica_id` and holds no liveness lock (it died,
        left, or fenced itself) becomes `replica_id`'s, as `adopt_sessions` does (PostgreSQL
        only). Which owners run is read by each adopting statement as it runs, not from a list
        read before that could go stale: an owner that holds its lock is never adopted from."""
        return await self._adopt(replica_id, [replica_id], _BY_LOCK)

    async def _adopt(
        self, replica_id: str, keep: list[str], statements: tuple[Select[tuple[str, str]], Update]
    ) -> list[str]:
        adoptable, adopt = statements
        adopted: list[str] = []
        before: Counter[str] = Counter()
        async with self._db.write() as conn:
            rows = list(await conn.execute(adoptable, {"keep": keep}))
            before.update(str(owner) for _, owner in rows)
            ids = [str(session_id) for session_id, _ in rows]
            for start in range(0, len(ids), _CHUNK):
                result = await conn.execute(
                    adopt,
                    {"ids": ids[start : start + _CHUNK], "keep": keep, "replica_id": replica_id},
                )
                adopted.extend(str(v) for v in result.scalars())
        log.info(
            "sessions adopted",
            extra={"replica": replica_id, "sessions": len(adopted), "from": dict(before)},
        )
        return sorted(adopted)
