"""Joining a cluster: the composition root's cluster-mode half.

A replica holds its membership (store/db/membership.py: the connection whose locks say it lives),
a NATS connection for request-reply between replicas (bus/replica_requests.py), and its `Replica`
(replica.py: heartbeats, fencing, watching its peers). Every replica runs agents and serves
every route; a request that acts on a session another replica runs is carried there
(api/routing.py), and a peer that is gone is taken over (`take_over`).

Imported by `clarion.server.serving` only.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field

from starlette.applications import Starlette
from starlette.types import ASGIApp

from clarion.api.carrying import RequestCarrier
from clarion.api.mcp_proxy import McpToOwner
from clarion.api.route_targets import RouteTable
from clarion.api.routing import ClusterRouting, placement_order
from clarion.api.session_gate import SessionGate
from clarion.bus.adoptions import announce_adoption, hear_adoptions
from clarion.bus.replica_requests import NatsCarryTransport, nats_carry_transport
from clarion.bus.waiter_queries import ask_waiters, serve_waiters
from clarion.config import Settings
from clarion.domain.scope import SessionScope
from clarion.ports.cluster import DeadPeer, ReplicaInfo, SessionRoute
from clarion.ports.ownership import OwnerFence
from clarion.projection.reads import AgentRunningHere
from clarion.projection.waiter_lookup import LiveWaiterLookup
from clarion.runtime import log_fields
from clarion.server.replica import Replica
from clarion.server.wiring import App
from clarion.store import Membership, membership

log = logging.getLogger(__name__)

# How long a replica waits for a peer's answer about its live waiters (a read, not a write).
_WAITERS_ASK_S = 2.0


@dataclass(eq=False)
class ReplicaDirectory:
    """Implements ports.cluster.Directory over the store and the membership."""

    app: App
    this: Replica

    async def route_of_session(self, session_id: str) -> SessionRoute | None:
        return await self.app.ownership.route_of_session(session_id)

    async def route_of_bundle(self, pending_id: str) -> SessionRoute | None:
        return await self.app.ownership.route_of_bundle(pending_id)

    async def route_of_message(self, message_id: str) -> SessionRoute | None:
        return await self.app.ownership.route_of_message(message_id)

    async def route_of_task(self, task_id: str) -> SessionRoute | None:
        return await self.app.ownership.route_of_task(task_id)

    async def placement(self) -> list[str]:
        counts = await self.app.ownership.placement(self.this.timeout_s)
        return placement_order(counts, self.this.replica_id)

    async def replica(self, replica_id: str) -> ReplicaInfo | None:
        return next((r for r in await self.this.replicas() if r.id == replica_id), None)

    async def is_gone(self, replica_id: str) -> bool:
        return not await self.app.ownership.is_running(replica_id)


@dataclass(eq=False)
class AdvertisedUrls:
    """The replicas' advertise URLs for reads (projection/reads.py `ReplicaUrls`). A replica
    keeps its URL for its whole life and takes a new id each start, so a URL once read is
    kept until the replica is seen gone; only an id not known yet reads the live replicas
    again (one read for all)."""

    this: Replica
    known: dict[str, str] = field(default_factory=dict)

    def forget(self, replica_id: str) -> None:
        self.known.pop(replica_id, None)

    async def __call__(self, replica_ids: Collection[str]) -> Mapping[str, str]:
        if any(rid not in self.known for rid in replica_ids):
            self.known.update((r.id, r.advertise_url) for r in await self.this.replicas())
        return {rid: self.known[rid] for rid in replica_ids if rid in self.known}


@dataclass(eq=False)
class Joined:
    """A replica attached to its application: what the server's life drives."""

    app: App
    replica: Replica
    gate: SessionGate
    # Routes to a replica seen gone are read afresh (api/route_memory.py); `announce` tells
    # the other replicas of an adoption.
    owner_gone: Callable[[str], None] = lambda _replica_id: None
    announce: Callable[[str], Awaitable[None]] | None = None

    def own_sessions(self) -> None:
        """Sessions created from now on are this replica's, and every session write checks
        that the session still is."""
        self.app.ownership.own_sessions(
            OwnerFence(self.replica.replica_id, self.replica.stop_fenced)
        )

    async def adopt_orphans(self) -> SessionScope:
        """At start: the sessions nobody runs that no other replica will adopt."""
        return SessionScope.only(await self.app.ownership.adopt_orphans(self.replica.replica_id))

    async def watch_peers(self) -> None:
        ownership, me = self.app.ownership, self.replica.replica_id

        async def dead_peers() -> list[DeadPeer]:
            peers = await ownership.dead_peers(me)
            for peer in peers:
                self.owner_gone(peer.replica_id)
            return peers

        await self.replica.watch_peers(dead_peers, self.take_over)

    async def take_over(self, dead: str) -> None:
        """Adopt replica `dead`'s sessions (if this replica is the one that deletes its row)
        and reconcile them as startup does, while requests for them wait; then answer their
        queued Slack clicks at once. A recovery that fails stops this replica: its sessions,
        the adopted ones included, then go to another survivor, whose recovery finds done
        what this one did."""
        me = self.replica.replica_id
        async with self.gate.adopting():
            adopted = await self.app.ownership.adopt_replica(me, dead)
            self.app.metrics.adopted(len(adopted or ()))
            if adopted:
                await self.gate.recovering(adopted)
        if not adopted:
            return
        if self.announce is not None:
            await self.announce(dead)
        recovered = False
        try:
            report = await self.app.recovery.run(SessionScope.only(adopted))
            log.info(
                "adopted sessions recovered",
                extra={"replica": me, "dead_replica": dead, "sessions": adopted, **asdict(report)},
            )
            recovered = True
        except Exception as exc:
            log.exception(
                "recovery of adopted sessions failed", extra={"replica": me, "dead_replica": dead}
            )
            self.replica.stop_fenced(f"recovery of sessions adopted from {dead} failed: {exc!r}")
        finally:
            await self.gate.recovered(adopted)
        # The adopted sessions' deadlines are this replica's to fire now.
        self.app.deadlines.wake()
        if recovered:  # else this replica stops, and the next adopter takes them up
            await self._take_up_slack_clicks(dead, adopted)

    async def _take_up_slack_clicks(self, dead: str, adopted: list[str]) -> None:
        """The adopted sessions' queued Slack clicks are this replica's to answer now, at once:
        the dead replica's claims on them are released (a committed update) and the answerer
        woken. A failed release leaves those claims to lapse at their lease."""
        answerer = self.app.slack_answerer
        if answerer is None:
            return
        me = self.replica.replica_id
        try:
            released = await answerer.take_up(adopted)
        except Exception:
            log.exception(
                "slack claims of adopted sessions not released; they lapse at their lease",
                extra={"replica": me, "dead_replica": dead, "sessions": adopted},
            )
            return
        log.info(
            "slack clicks of adopted sessions taken up",
            extra={"replica": me, "dead_replica": dead, "sessions": adopted, "released": released},
        )


@dataclass(eq=False)
class ClusterMode:
    member: Membership
    transport: NatsCarryTransport
    mcp: McpToOwner | None = None

    async def attach(
        self, app: App, api: Starlette, settings: Settings, sessions: Callable[[], int]
    ) -> tuple[Joined, ASGIApp]:
        """Make the replica visible to the HTTP edge, route requests by session owner (as
        `api`'s routes declare), and start answering requests and questions carried here.
        Returns the routed application."""
        replica = Replica(self.member, sessions)
        nc = self.transport.client
        joined = Joined(app, replica, SessionGate(), announce=lambda d: announce_adoption(nc, d))
        app.services.cluster = replica
        directory = ReplicaDirectory(app, replica)
        self.mcp = McpToOwner(replica.replica_id)
        routed = ClusterRouting(
            api,
            routes=RouteTable.of(api.routes),
            replica_id=replica.replica_id,
            directory=directory,
            carrier=RequestCarrier(
                self.transport, directory, carry_deadline(settings), app.metrics, app.tracer
            ),
            mcp=self.mcp,
            gate=joined.gate,
            adoption_wait_s=replica.adoption_horizon_s + settings.replica_timeout,
            link_pending=None if app.services.links is None else app.services.links.pending_of,
            link_message=None if app.services.links is None else app.services.links.message_of,
            tracer=app.tracer,
            redirect_to_owner=settings.redirect_to_owner,
        )
        urls = AdvertisedUrls(replica)

        def owner_gone(replica_id: str) -> None:
            routed.owner_gone(replica_id)
            urls.forget(replica_id)  # a read names no address of a replica that is gone

        joined.owner_gone = owner_gone
        await hear_adoptions(nc, owner_gone)
        app.services.reads.use_live_waiters(
            LiveWaiterLookup(
                replica_id=replica.replica_id,
                local=app.waiters.has,
                owners=app.ownership.bundle_owners,
                ask=lambda owner, ids: ask_waiters(nc, owner, ids, _WAITERS_ASK_S),
            )
        )
        # Whether an agent runs is known only on the session's owner; elsewhere the session's
        # record (stopped while idle, or not) decides.
        me = replica.replica_id

        def look() -> AgentRunningHere:
            running = app.runtime.running_sessions()
            return lambda s: s.id in running if s.owner_replica_id in (None, me) else None

        app.services.reads.use_agent_running(look)
        app.services.reads.use_replica_urls(urls)
        await serve_waiters(
            nc, replica.replica_id, lambda ids: {i for i in ids if app.waiters.has(i)}
        )
        await routed.listen(self.transport)
        return joined, routed


def carry_deadline(settings: Settings) -> float:
    """How long a replica waits for the owner's reply: the longest a request can take there
    (an answer's live confirmation, or a detached answer's resume: the agent's acceptance and
    the successor's publication), with a margin for the hops."""
    t = settings.timeouts
    return t.live_confirm + t.resume_accept + t.persist + 5.0


@contextlib.asynccontextmanager
async def cluster_mode(settings: Settings) -> AsyncIterator[ClusterMode]:
    """Before anything touches the database: join (AnotherServer if a single-mode server holds
    the database), then connect for request-reply."""
    async with (
        membership(settings.database_url, settings.replica_timeout) as member,
        nats_carry_transport(settings.bus_url) as transport,
    ):
        mode = ClusterMode(member, transport)
        log_fields.stamp(replica=member.replica_id)
        try:
            yield mode
        finally:
            log_fields.unstamp("replica")
            if mode.mcp is not None:
                await mode.mcp.aclose()
