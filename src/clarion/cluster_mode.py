"""Joining a cluster: the composition root's cluster-mode half.

A replica holds its membership (store/cluster.py: the connection whose locks say it lives),
a NATS connection for request-reply between replicas (bus/forwarding.py), and its `Replica`
(replica.py: standby until it leads, heartbeats, fencing). Every replica answers requests
carried to it from the start; while standby it carries its own `/api/` requests to the active
replica (api/forwarding.py) and proxies agents' MCP requests there (api/mcp_proxy.py).

Imported by `clarion.serving` only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from starlette.types import ASGIApp

from clarion.api.forwarding import ToActiveReplica, replay, standby_error
from clarion.api.mcp_proxy import McpToActive
from clarion.api.services import ApiServices
from clarion.bus.forwarding import NatsForwarding, nats_forwarding
from clarion.config import Settings
from clarion.domain.errors import ReplicaStandby
from clarion.ports.cluster import ReplicaInfo
from clarion.replica import Replica
from clarion.store.cluster import Membership, membership


@dataclass(eq=False)
class ClusterMode:
    member: Membership
    forwarding: NatsForwarding
    replica: Replica | None = None
    mcp_proxy: McpToActive | None = None

    async def attach(
        self, services: ApiServices, asgi: ASGIApp, settings: Settings, sessions: Callable[[], int]
    ) -> Replica:
        """Make the replica visible to the HTTP edge and start answering carried requests."""
        replica = Replica(self.member, sessions)
        self.replica = replica
        services.cluster = replica
        to_active = ToActiveReplica(replica, self.forwarding, forward_deadline(settings))
        services.to_active = to_active

        async def refused(active: ReplicaInfo | None, reason: str) -> ReplicaStandby:
            return await standby_error(replica, active, unreached=reason if active else None)

        self.mcp_proxy = McpToActive(replica.replica_id, to_active.active_replica, refused)
        services.mcp_to_active = self.mcp_proxy
        await self.forwarding.serve(self.member.replica_id, lambda request: replay(asgi, request))
        return replica


def forward_deadline(settings: Settings) -> float:
    """How long a standby waits for the active replica's reply: the longest a request can take
    there (an answer's live confirmation, or a detached answer's resume: the agent's acceptance
    and the successor's publication), with a margin for the hops."""
    t = settings.timeouts
    return t.live_confirm + t.resume_accept + t.persist + 5.0


@contextlib.asynccontextmanager
async def cluster_mode(settings: Settings) -> AsyncIterator[ClusterMode]:
    """Before anything touches the database: join (AnotherServer if a single-mode server holds
    the database), then connect for request-reply."""
    async with (
        membership(settings.database_url, settings.replica_timeout) as member,
        nats_forwarding(settings.bus_url) as forwarding,
    ):
        mode = ClusterMode(member, forwarding)
        try:
            yield mode
        finally:
            if mode.mcp_proxy is not None:
                await mode.mcp_proxy.aclose()


async def until_leading(replica: Replica, serving: asyncio.Future[None]) -> bool:
    """Standby until this replica leads (True), or until the server stops first (False)."""
    leading = asyncio.ensure_future(replica.lead())
    await asyncio.wait({leading, serving}, return_when=asyncio.FIRST_COMPLETED)
    if leading.done():
        leading.result()
        return True
    leading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await leading
    return False
