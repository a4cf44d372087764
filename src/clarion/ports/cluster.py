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


@dataclass(frozen=True, slots=True)
class ForwardedRequest:
    """An HTTP request carried from one replica to another, as the ASGI scope had it."""

    method: str
    path: str
    raw_path: str
    query: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True, slots=True)
class ForwardedReply:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


class ForwardFailed(Exception):
    """A forwarded request got no reply. `delivered` is False when no replica received it (so
    nothing was applied) and True when it went out but no reply came before the deadline (it
    may have been applied)."""

    def __init__(self, message: str, *, delivered: bool) -> None:
        super().__init__(message)
        self.delivered = delivered


class Forwarder(Protocol):
    """Request-reply between replicas. Implemented over NATS (`clarion.bus.forwarding`)."""

    async def forward(
        self, replica_id: str, request: ForwardedRequest, timeout_s: float
    ) -> ForwardedReply:
        """The reply of replica `replica_id`; raises ForwardFailed without one."""
        ...
