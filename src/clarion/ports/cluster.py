"""What the edges may know about cluster mode: this replica, its role, and its peers.

Implemented by `clarion.replica` (the composition side); the HTTP edge reads it for
`/healthz`, `GET /api/v1/cluster` and the standby's 503. In single mode there is none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

Role = Literal["starting", "standby", "active"]


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    id: str
    advertise_url: str
    role: str
    started_at: datetime
    last_seen_at: datetime
    sessions: int


class ClusterView(Protocol):
    @property
    def replica_id(self) -> str: ...

    @property
    def role(self) -> Role:
        """`starting` until registered, `standby` while another replica is active, `active`
        once this replica holds leadership and has run recovery."""
        ...

    async def replicas(self) -> list[ReplicaInfo]:
        """The live replicas (seen within the replica timeout), oldest first."""
        ...

    async def active(self) -> ReplicaInfo | None:
        """The live active replica, if any."""
        ...
