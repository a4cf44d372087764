"""Cluster mode (PostgreSQL): which replica a session belongs to, where a new one goes, and
adopting the sessions of replicas that are gone.

A session belongs to the replica that runs its agent (`task_sessions.owner_replica_id`,
written when the session is created; null for a single-mode server's sessions). Sessions
change owner only here, and only away from a replica that holds no liveness lock
(liveness.py), tested by the adopting statements themselves as each runs, never from a list
read earlier that could have gone stale:

- `adopt_replica`: a survivor deletes the dead replica's row and takes its sessions in one
  transaction. Deleting the row is what makes exactly one survivor the adopter (the others
  find no row), and it waits for any session the dead replica was still creating (that
  transaction holds the row FOR KEY SHARE, store/db/owner_fence.py), so none is left behind.
- `adopt_orphans`: at a replica's start, the sessions nobody owns (a single-mode server made
  them) or whose owner left no row and does not run.

Each session changes owner once (the condition is re-checked on every row as it is locked),
so two adopters never both take one. Rows are locked in id order, the order every
multi-session write takes its session locks in, so adoption never deadlocks with a write in
flight.

Used by the store's cluster port (`port_calls.OwnershipCalls`) only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import TextClause, text

from clarion.domain.models import TERMINAL_SESSION_STATES
from clarion.ports.cluster import DeadPeer, SessionRoute
from clarion.ports.ownership import OwnerFence
from clarion.store.db.engine import Db
from clarion.store.db.liveness import owner_not_running

log = logging.getLogger(__name__)

_NOT_RUNNING = owner_not_running("s.owner_replica_id").text
_DEAD_ROW = owner_not_running("r.id").text
_TERMINAL = ", ".join(f"'{state.value}'" for state in sorted(TERMINAL_SESSION_STATES))

# An adoption waits for the dead owner's writes in flight; one that never ends (a frozen process
# whose connection PostgreSQL still holds open) must not hold the adopter: give up, try again.
_ADOPTION_LOCK_TIMEOUT = text("SET LOCAL lock_timeout = '10s'")
_DELETE_DEAD = text(
    f"DELETE FROM clarion_replicas AS r WHERE r.id = :dead AND {_DEAD_ROW} RETURNING r.id"
)


def _adopting(condition: str) -> TextClause:
    """Lock the matching sessions in id order, then give them to the adopter, the condition
    checked again on each row as it is updated."""
    return text(
        "WITH locked AS (SELECT s.id FROM task_sessions AS s "
        f"WHERE {condition} ORDER BY s.id FOR UPDATE) "
        "UPDATE task_sessions AS s SET owner_replica_id = :replica_id FROM locked "
        f"WHERE s.id = locked.id AND ({condition}) RETURNING s.id"
    )


_ADOPT_FROM = _adopting(f"s.owner_replica_id = :dead AND {_NOT_RUNNING}")
_ADOPT_ORPHANS = _adopting(
    "s.owner_replica_id IS NULL OR (s.owner_replica_id <> :replica_id "
    "AND s.owner_replica_id NOT IN (SELECT id FROM clarion_replicas) "
    f"AND {_NOT_RUNNING})"
)
_DEAD_PEERS = text(
    "SELECT r.id, EXTRACT(EPOCH FROM (now() - r.last_seen_at)) AS silent_s "
    f"FROM clarion_replicas AS r WHERE r.id <> :replica_id AND {_DEAD_ROW} ORDER BY r.id"
)
# Live replicas that serve, each with the sessions it runs (not terminal), fewest first.
_PLACEMENT = text(
    "SELECT r.id, count(s.id) AS sessions FROM clarion_replicas AS r "
    "LEFT JOIN task_sessions AS s ON s.owner_replica_id = r.id "
    f"AND s.state NOT IN ({_TERMINAL}) "
    "WHERE r.role = 'active' AND r.last_seen_at > now() - make_interval(secs => :timeout) "
    "GROUP BY r.id, r.started_at ORDER BY count(s.id), r.started_at, r.id"
)
_SESSION_OWNER = text(
    "SELECT s.id, s.owner_replica_id AS owner FROM task_sessions AS s WHERE s.id = :id"
)
_BUNDLE_OWNER = text(
    "SELECT s.id, s.owner_replica_id AS owner FROM task_sessions AS s WHERE s.id = "
    "(SELECT task_session_id FROM task_session_messages WHERE pending_id = :id LIMIT 1)"
)
_MESSAGE_OWNER = text(
    "SELECT s.id, s.owner_replica_id AS owner FROM task_sessions AS s WHERE s.id = "
    "(SELECT task_session_id FROM task_session_messages WHERE id = :id)"
)
_RUNNING = text(f"SELECT NOT {owner_not_running('CAST(:replica_id AS text)').text}")
_BUNDLE_OWNERS = text(
    "SELECT DISTINCT m.pending_id, s.owner_replica_id AS owner FROM task_session_messages AS m "
    "JOIN task_sessions AS s ON s.id = m.task_session_id "
    "WHERE m.pending_id = ANY(CAST(:ids AS text[]))"
)


class SqlOwnership:
    """Cluster mode's reads and adoptions (the store's half of `clarion.ports.cluster`)."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def own_sessions(self, fence: OwnerFence) -> None:
        """From now on sessions this store creates are `fence.replica_id`'s, and every
        session write checks that the session still is (store/db/owner_fence.py)."""
        self._db.fence = fence

    async def adopt_replica(self, replica_id: str, dead: str) -> list[str] | None:
        """Take over replica `dead`, which holds no liveness lock: delete its row and make its
        sessions `replica_id`'s, in one transaction. The ids adopted, sorted; None when the
        row was gone already (another survivor adopted it) or `dead` runs after all."""
        async with self._db.write() as conn:
            await conn.execute(_ADOPTION_LOCK_TIMEOUT)
            if (await conn.execute(_DELETE_DEAD, {"dead": dead})).first() is None:
                return None
            result = await conn.execute(_ADOPT_FROM, {"dead": dead, "replica_id": replica_id})
            adopted = sorted(str(v) for v in result.scalars())
        log.info(
            "replica adopted",
            extra={"replica": replica_id, "dead_replica": dead, "sessions": len(adopted)},
        )
        return adopted

    async def adopt_orphans(self, replica_id: str) -> list[str]:
        """Sessions owned by nobody, or by a replica that left no row and does not run,
        become `replica_id`'s; the ids, sorted. A repeat adopts none."""
        async with self._db.write() as conn:
            result = await conn.execute(_ADOPT_ORPHANS, {"replica_id": replica_id})
            adopted = sorted(str(v) for v in result.scalars())
        log.info("orphan sessions adopted", extra={"replica": replica_id, "sessions": len(adopted)})
        return adopted

    async def dead_peers(self, replica_id: str) -> list[DeadPeer]:
        """Replicas with a row but no liveness lock: stopped, crashed or fenced, and not yet
        adopted."""
        async with self._db.read_one() as conn:
            rows = await conn.execute(_DEAD_PEERS, {"replica_id": replica_id})
            return [DeadPeer(str(r.id), float(r.silent_s)) for r in rows]

    async def is_running(self, replica_id: str) -> bool:
        """Whether `replica_id` holds its liveness lock right now."""
        async with self._db.read_one() as conn:
            return bool((await conn.execute(_RUNNING, {"replica_id": replica_id})).scalar())

    async def placement(self, timeout_s: float) -> list[tuple[str, int]]:
        """Live serving replicas with the sessions each runs, fewest first (oldest first
        among equals): where a new session should go."""
        async with self._db.read_one() as conn:
            rows = await conn.execute(_PLACEMENT, {"timeout": timeout_s})
            return [(str(r.id), int(r.sessions)) for r in rows]

    async def route_of_session(self, session_id: str) -> SessionRoute | None:
        return await self._route(_SESSION_OWNER, session_id)

    async def route_of_bundle(self, pending_id: str) -> SessionRoute | None:
        return await self._route(_BUNDLE_OWNER, pending_id)

    async def route_of_message(self, message_id: str) -> SessionRoute | None:
        return await self._route(_MESSAGE_OWNER, message_id)

    async def bundle_owners(self, pending_ids: Sequence[str]) -> dict[str, str | None]:
        if not pending_ids:
            return {}
        async with self._db.read_one() as conn:
            rows = await conn.execute(_BUNDLE_OWNERS, {"ids": list(pending_ids)})
            return {str(r.pending_id): None if r.owner is None else str(r.owner) for r in rows}

    async def _route(self, query: TextClause, key: str) -> SessionRoute | None:
        async with self._db.read_one() as conn:
            row = (await conn.execute(query, {"id": key})).first()
        if row is None:
            return None
        return SessionRoute(str(row.id), None if row.owner is None else str(row.owner))
