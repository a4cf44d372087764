"""Cluster mode's durable side, as the cluster code sees it: which replica owns which session,
adopting the sessions of replicas that are gone, and the fence that keeps a replica from
writing to sessions it lost.

Implemented by the store (`clarion.store.ownership`, `clarion.store.db.owner_fence`); used by
the composition root's cluster half (`clarion.server.cluster`) only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from clarion.ports.cluster import DeadPeer, SessionRoute


@dataclass(frozen=True, slots=True)
class OwnerFence:
    """This replica's id, which every session write checks the session's owner against, and
    what to do (stop the replica) before a write to a session it lost is refused."""

    replica_id: str
    on_lost: Callable[[str], None]


class Ownership(Protocol):
    def own_sessions(self, fence: OwnerFence) -> None:
        """From now on sessions the store creates are `fence.replica_id`'s, and every session
        write checks that the session still is (FencedOut, after `fence.on_lost`, if not)."""
        ...

    async def adopt_replica(self, replica_id: str, dead: str) -> list[str] | None:
        """Take over replica `dead`, which holds no liveness lock: delete its row and make its
        sessions `replica_id`'s, in one transaction. The ids adopted, sorted; None when the
        row was gone already (another survivor adopted it) or `dead` runs after all."""
        ...

    async def adopt_orphans(self, replica_id: str) -> list[str]:
        """Sessions owned by nobody, or by a replica that left no row and does not run,
        become `replica_id`'s; the ids, sorted. A repeat adopts none."""
        ...

    async def dead_peers(self, replica_id: str) -> list[DeadPeer]:
        """Replicas other than `replica_id` with a row but no liveness lock, not yet adopted."""
        ...

    async def is_running(self, replica_id: str) -> bool:
        """Whether `replica_id` holds its liveness lock right now."""
        ...

    async def placement(self, timeout_s: float) -> list[tuple[str, int]]:
        """Live serving replicas with the sessions each runs, fewest first (oldest first
        among equals): where a new session should go."""
        ...

    async def route_of_session(self, session_id: str) -> SessionRoute | None:
        """The session and its owner; None when there is no such session."""
        ...

    async def route_of_bundle(self, pending_id: str) -> SessionRoute | None:
        """The session of the bundle and its owner; None when there is no such bundle."""
        ...

    async def route_of_message(self, message_id: str) -> SessionRoute | None:
        """The session of the message and its owner; None when there is no such message."""
        ...

    async def route_of_task(self, task_id: str) -> SessionRoute | None:
        """The task's primary session and its owner; None without one."""
        ...

    async def bundle_owners(self, pending_ids: Sequence[str]) -> dict[str, str | None]:
        """The owning replica of each bundle found, by pending id (None: nobody's)."""
        ...
