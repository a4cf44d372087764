"""What the edges may know about cluster mode: this replica, its peers, and which replica a
request belongs to.

Implemented on the composition side (`clarion.server.replica`, `clarion.server.cluster`); the
HTTP edge reads it for `/healthz`, `GET /api/v1/cluster` and to carry a request to the replica
that runs its session. In single mode there is none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from clarion.ports.tracing import Carrier, no_context

Role = Literal["starting", "active"]


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    id: str
    advertise_url: str
    role: str
    started_at: datetime
    last_seen_at: datetime
    sessions: int


@dataclass(frozen=True, slots=True)
class SessionRoute:
    """The session a request concerns and the replica that owns it (None: nobody)."""

    session_id: str
    owner: str | None


@dataclass(frozen=True, slots=True)
class DeadPeer:
    """A replica with a row but no liveness lock, not yet adopted."""

    replica_id: str
    silent_s: float  # since its last heartbeat, by the database's clock


class ClusterView(Protocol):
    @property
    def replica_id(self) -> str: ...

    @property
    def role(self) -> Role:
        """`starting` until this replica has adopted and recovered its first sessions,
        `active` once it serves."""
        ...

    async def replicas(self) -> list[ReplicaInfo]:
        """The live replicas (seen within the replica timeout), oldest first."""
        ...


class Directory(Protocol):
    """Where a request must be served: the owner of the session it concerns."""

    async def route_of_session(self, session_id: str) -> SessionRoute | None: ...

    async def route_of_bundle(self, pending_id: str) -> SessionRoute | None: ...

    async def route_of_message(self, message_id: str) -> SessionRoute | None: ...

    async def route_of_task(self, task_id: str) -> SessionRoute | None:
        """The task's primary session (its oldest when none is primary): where the task's
        agent, and so its worktree, lives."""
        ...

    async def placement(self) -> list[str]:
        """Serving replicas, the one a new session should go to first (fewest sessions; the
        replica asking among equals)."""
        ...

    async def replica(self, replica_id: str) -> ReplicaInfo | None:
        """A live replica's row (its advertised address), or None."""
        ...

    async def is_gone(self, replica_id: str) -> bool:
        """True once the replica holds no liveness lock (it died, stopped or fenced itself)."""
        ...


@dataclass(frozen=True, slots=True)
class CarriedRequest:
    """An HTTP request carried from one replica to another, as the ASGI scope had it."""

    method: str
    path: str
    raw_path: str
    query: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    # The carrying replica's trace context: the replica that serves it continues the trace.
    trace: Carrier = field(default_factory=no_context)


@dataclass(frozen=True, slots=True)
class CarriedReply:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


class CarryFailed(Exception):
    """A carried request got no reply. `may_have_applied` is False when no replica received
    it (so nothing was applied) and True when it went out but no reply came before the
    deadline (it may have been applied)."""

    def __init__(self, message: str, *, may_have_applied: bool) -> None:
        super().__init__(message)
        self.may_have_applied = may_have_applied


CarriedHandler = Callable[[CarriedRequest], Awaitable[CarriedReply]]
"""Serves one request carried to this replica and returns its reply."""


class CarriedRequests(Protocol):
    """The serving side of request-reply between replicas (`clarion.bus.replica_requests`)."""

    async def serve(self, replica_id: str, handler: CarriedHandler) -> None:
        """From now on, answer the requests carried to `replica_id` with `handler`."""
        ...


class CarryTransport(Protocol):
    """Request-reply between replicas. Implemented over NATS (`clarion.bus.replica_requests`)."""

    async def carry(
        self, replica_id: str, request: CarriedRequest, timeout_s: float
    ) -> CarriedReply:
        """The reply of replica `replica_id`; raises CarryFailed without one."""
        ...
