"""Cluster mode (PostgreSQL): which replica a session belongs to, and adopting the sessions of
replicas that are gone.

A session belongs to the replica that runs its agent (`task_sessions.owner_replica_id`,
written when the session is created; null for a single-mode server's sessions). A replica
that takes over adopts, in one guarded update, every session whose owner is neither itself
nor a replica still running, and then recovers exactly those sessions. Which replicas run is
read from their liveness locks (liveness.py) by the adopting statements themselves, as each
runs, never from a list read before that could go stale. That condition is the guard, checked
on every row as it is locked and again as it is updated: each session changes owner once, so
of two replicas adopting at the same time each session goes to exactly one (the second
re-reads a row the first changed and finds it owned by a running replica). The rows are
locked in id order, the order every multi-session write takes its session locks in, so
adoption never deadlocks with a write in flight.

Imported by the SqlStore facade only.
"""

from __future__ import annotations

import logging
from collections import Counter

from sqlalchemy import and_, bindparam, or_, select, update

from clarion.store.liveness import owner_not_running
from clarion.store.rows import StoreBase
from clarion.store.schema import task_sessions

log = logging.getLogger(__name__)

_owner = task_sessions.c.owner_replica_id
# Owned by nobody, or by a replica that is not the adopter and holds no liveness lock.
_UNKEPT = or_(
    _owner.is_(None),
    and_(_owner != bindparam("replica_id"), owner_not_running("task_sessions.owner_replica_id")),
)
_ADOPTABLE = (
    select(task_sessions.c.id, _owner).where(_UNKEPT).order_by(task_sessions.c.id).with_for_update()
)
_ADOPT = (
    update(task_sessions)
    .where(task_sessions.c.id.in_(bindparam("ids", expanding=True)), _UNKEPT)
    .values(owner_replica_id=bindparam("replica_id"))
    .returning(task_sessions.c.id)
)
# Bounds the bind parameters of one statement (asyncpg allows 32,767).
_CHUNK = 5000


class OwnershipQueries(StoreBase):
    def own_new_sessions(self, replica_id: str) -> None:
        """Sessions this store creates from now on belong to `replica_id`."""
        self._db.owner = replica_id

    async def adopt_sessions(self, replica_id: str) -> list[str]:
        """Every session whose owner is not `replica_id` and holds no liveness lock (it died,
        left, or fenced itself; or a single-mode server made it) becomes `replica_id`'s, in one
        transaction; the ids adopted, sorted. A repeat adopts none."""
        adopted: list[str] = []
        before: Counter[str] = Counter()
        async with self._db.write() as conn:
            rows = list(await conn.execute(_ADOPTABLE, {"replica_id": replica_id}))
            before.update(str(owner) for _, owner in rows)
            ids = [str(session_id) for session_id, _ in rows]
            for start in range(0, len(ids), _CHUNK):
                result = await conn.execute(
                    _ADOPT, {"ids": ids[start : start + _CHUNK], "replica_id": replica_id}
                )
                adopted.extend(str(v) for v in result.scalars())
        log.info(
            "sessions adopted",
            extra={"replica": replica_id, "sessions": len(adopted), "from": dict(before)},
        )
        return sorted(adopted)
