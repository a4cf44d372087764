"""Cluster mode: every request that acts on a session is served by the replica that runs it.

Any replica accepts every route. Reads are served where they arrive (they read the shared
database; a bundle's live state is asked of its owner, projection/waiter_lookup.py). A request that
acts on a session, an answer, a permission decision, a prompt, a cancel, is served by the
session's owner, the replica that runs its agent and holds its live waiters: it is carried
there (api/carrying.py) and the owner's reply relayed unchanged, or, with
`cluster.redirect_to_owner` on, sent there by a 307 the client follows
(api/owner_redirect.py). A new session goes to the replica with the fewest sessions (this one
among equals). An agent's MCP request is proxied to its session's owner over HTTP
(api/mcp_proxy.py).

When the owner cannot be reached:
- nobody received the request (NATS: no responders) and the owner is gone: its sessions are
  adopted by a survivor within the replica timeout, so the request waits for the adoption
  (no longer than `adoption_wait_s`) and then goes to the adopter. Otherwise 503
  `replica_unavailable`, retryable, nothing applied;
- the request went out and the owner died before replying, or the deadline passed: 503
  `replica_unreachable`, retryable, saying it may have been applied. Sending an answer or a
  decision again is safe: one already recorded comes back as 409 naming the winner.

A request for a session this replica has just adopted waits until the session is reconciled
(api/session_gate.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.api.carrying import (
    RequestCarrier,
    carried_by,
    carried_request,
    read_body,
    replay,
    send_reply,
)
from clarion.api.errors import error_response
from clarion.api.mcp_proxy import McpToOwner
from clarion.api.owner_redirect import OwnerRedirect, send_redirect
from clarion.api.route_memory import RouteMemory
from clarion.api.route_targets import RouteTable, Target
from clarion.api.session_gate import SessionGate
from clarion.domain.errors import ReplicaUnavailable, ReplicaUnreachable
from clarion.ports.cluster import (
    CarriedReply,
    CarriedRequest,
    CarriedRequests,
    CarryFailed,
    Directory,
    SessionRoute,
)
from clarion.ports.tracing import NO_TRACER, Tracer

log = logging.getLogger(__name__)

# How often a request waiting for a dead owner's sessions to be adopted looks again.
_ADOPTION_POLL_S = 0.25


def placement_order(counts: Sequence[tuple[str, int]], replica_id: str) -> list[str]:
    """Where a new session should go, best first, from the live replicas' session counts
    (fewest first): the replica with the fewest, and among those with as few, the one the
    request reached (no hop, and a burst of creations through a load balancer spreads the way
    the balancer spreads them, rather than all landing on the one replica that looked least
    loaded when each read the counts)."""
    if not counts:
        return []
    fewest = min(n for _, n in counts)
    here = [rid for rid, n in counts if rid == replica_id and n == fewest]
    return here + [rid for rid, _ in counts if rid not in here]


class ClusterRouting:
    """ASGI middleware in front of a cluster replica's application."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: RouteTable,
        replica_id: str,
        directory: Directory,
        carrier: RequestCarrier,
        mcp: McpToOwner,
        gate: SessionGate,
        adoption_wait_s: float,
        link_pending: Callable[[str], str | None] | None = None,
        link_message: Callable[[str], str | None] | None = None,
        tracer: Tracer = NO_TRACER,
        redirect_to_owner: bool = False,
    ) -> None:
        self._tracer = tracer
        # When on, a request for another live replica's session gets a 307 to it instead
        # of the carry (api/owner_redirect.py).
        self._redirect = OwnerRedirect(directory) if redirect_to_owner else None
        self._app = app
        self._table = routes  # read from the app's own routes (api/route_targets.py)
        self._link_pending = link_pending
        self._link_message = link_message
        self._id = replica_id
        self._directory = directory
        self._carrier = carrier
        self._mcp = mcp
        self._gate = gate
        self._adoption_wait_s = adoption_wait_s
        self._routes = RouteMemory(replica_id)

    async def listen(self, carried: CarriedRequests) -> None:
        """Serve the requests other replicas carry here: each is replayed through this same
        routing (which serves a carried request here) and its reply goes back. The HTTP edge
        answers carried requests itself; nothing outside it sits on their path."""
        await carried.serve(self._id, self._replay)

    async def _replay(self, request: CarriedRequest) -> CarriedReply:
        # The carrying replica's trace goes on here: one trace across both replicas.
        with self._tracer.span("request.carried", parent=request.trace) as span:
            span.set("replica", self._id)
            span.set("path", request.path)
            reply = await replay(self, request)
            span.set("outcome", reply.status)
            return reply

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        http = scope["type"] == "http"
        target = self._table.target_of(scope["method"], scope["path"]) if http else None
        if target is None:
            await self._app(scope, receive, send)
            return
        carried = carried_by(scope) is not None
        if target.kind == "placement":
            if carried:
                await self._app(scope, receive, send)
            else:
                await self._place(scope, receive, send)
            return
        # An agent's MCP request for another replica's session (rare: agents are given their
        # own replica's address) is proxied to that replica's address, read afresh each time.
        mcp = scope["path"].startswith("/mcp/")
        route = await self._route(target, theirs=not mcp)
        if route is None or route.owner in (None, self._id) or carried:
            await self._serve_here(route, scope, receive, send)
        elif mcp:
            await self._proxy_mcp(route, scope, receive, send)
        elif (location := await self._location(route.owner, scope)) is not None:
            await send_redirect(location, send)
        else:
            await self._to_owner(target, route, scope, receive, send)

    async def _location(self, owner: str | None, scope: Scope) -> str | None:
        if self._redirect is None or owner is None:
            return None
        return await self._redirect.location(owner, scope)

    async def _serve_here(
        self, route: SessionRoute | None, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if route is not None:
            await self._gate.wait(route.session_id)
        await self._app(scope, receive, send)

    def owner_gone(self, replica_id: str) -> None:
        """`replica_id` holds no liveness lock any more (the peer watch saw it, or its adopter
        said so): routes to it are read afresh from now on (api/route_memory.py)."""
        self._routes.owner_gone(replica_id)
        self._forget_url(replica_id)

    def _forget_url(self, replica_id: str) -> None:
        if self._redirect is not None:
            self._redirect.forget(replica_id)

    async def _route(self, target: Target, *, theirs: bool = True) -> SessionRoute | None:
        known = self._routes.get(target, theirs=theirs)
        if known is not None:
            return known
        if target.kind == "link":
            # A bad token is served here, where it is refused like on any replica.
            pending_id = None if self._link_pending is None else self._link_pending(target.key)
            if pending_id is None:
                return None
            route = await self._directory.route_of_bundle(pending_id)
        elif target.kind == "decision_link":
            message_id = None if self._link_message is None else self._link_message(target.key)
            if message_id is None:
                return None
            route = await self._directory.route_of_message(message_id)
        elif target.kind == "bundle":
            route = await self._directory.route_of_bundle(target.key)
        elif target.kind == "message":
            route = await self._directory.route_of_message(target.key)
        elif target.kind == "task":
            route = await self._directory.route_of_task(target.key)
        else:
            route = await self._directory.route_of_session(target.key)
        if route is not None:
            self._routes.remember(target, route, theirs=theirs)
        return route

    async def _to_owner(
        self, target: Target, route: SessionRoute, scope: Scope, receive: Receive, send: Send
    ) -> None:
        body = await read_body(receive)
        request = carried_request(scope, body, self._id)
        owner = route.owner
        while owner is not None and owner != self._id:
            missed = await self._carried(owner, request, scope, receive, send)
            if missed is None:
                return
            self._routes.forget(owner)  # nobody listens for it: read where its sessions went
            self._forget_url(owner)
            moved = await self._adopted_from(owner, target)
            if moved is None:
                await error_response(await self._unavailable(owner, missed))(scope, receive, send)
                return
            route, owner = moved, moved.owner
        await self._serve_here(route, scope, _buffered(body, receive), send)

    async def _carried(
        self, to: str, request: CarriedRequest, scope: Scope, receive: Receive, send: Send
    ) -> CarryFailed | None:
        """Carry `request` to replica `to` and answer the caller with its reply (or with
        `replica_unreachable` when it may have been applied there); the failure, with the
        caller not answered yet, when nobody received it."""
        try:
            await send_reply(await self._carrier.carry(to, request), send)
            return None
        except CarryFailed as exc:
            self._log_failure(to, request, exc)
            if not exc.may_have_applied:
                return exc
            self._routes.forget(to)  # it died holding the request, or is stuck
            self._forget_url(to)
            await error_response(_unreachable(to, exc))(scope, receive, send)
            return None

    async def _adopted_from(self, owner: str, target: Target) -> SessionRoute | None:
        """The session's route once a survivor has adopted it from `owner`, which nobody
        answered for; None if `owner` is not gone (it runs but did not listen) or the
        adoption did not come in time."""
        if not await self._directory.is_gone(owner):
            return None
        self._routes.owner_gone(owner)
        deadline = time.monotonic() + self._adoption_wait_s
        while time.monotonic() < deadline:
            route = await self._route(target)
            if route is None:  # sessions and their rows are never deleted: nothing to wait for
                return None
            if route.owner != owner:
                return route
            await asyncio.sleep(_ADOPTION_POLL_S)
        return None

    async def _place(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A new session on the replica with the fewest sessions; here if that one cannot be
        reached (nothing was applied there)."""
        body = await read_body(receive)
        try:
            candidates = await self._directory.placement()
        except Exception as exc:  # placement is a preference; serving here is always correct
            log.warning("placement unavailable", extra={"replica": self._id, "reason": repr(exc)})
            candidates = []
        chosen = candidates[0] if candidates else self._id
        if chosen != self._id:
            request = carried_request(scope, body, self._id)
            if await self._carried(chosen, request, scope, receive, send) is None:
                return
        await self._app(scope, _buffered(body, receive), send)

    async def _proxy_mcp(
        self, route: SessionRoute, scope: Scope, receive: Receive, send: Send
    ) -> None:
        owner = None if route.owner is None else await self._directory.replica(route.owner)
        if owner is None:
            error = await self._unavailable(route.owner or "", None)
            await error_response(error)(scope, receive, send)
            return
        await self._mcp.proxy(scope, receive, send, owner)

    async def _unavailable(self, owner: str, exc: Exception | None) -> ReplicaUnavailable:
        info = await self._directory.replica(owner) if owner else None
        why = "" if exc is None else f" ({exc})"
        return ReplicaUnavailable(
            f"the replica that runs this session ({owner}) could not be reached{why}; nothing "
            "was applied. Its sessions are adopted by another replica within the replica "
            "timeout: retry shortly",
            replica_id=owner or None,
            replica_url=None if info is None else info.advertise_url,
        )

    def _log_failure(self, owner: str, request: CarriedRequest, exc: CarryFailed) -> None:
        log.warning(
            "carrying a request failed",
            extra={
                "replica": self._id,
                "owner": owner,
                "path": request.path,
                "may_have_applied": exc.may_have_applied,
                "reason": str(exc),
            },
        )


def _unreachable(owner: str, exc: CarryFailed) -> ReplicaUnreachable:
    return ReplicaUnreachable(
        f"the replica that runs this session ({owner}) did not answer ({exc}); the request "
        "may have been applied. Sending it again is safe for an answer or a decision: one "
        "already recorded is reported as a conflict naming the winner",
        replica_id=owner,
    )


def _buffered(body: bytes, receive: Receive) -> Receive:
    """`receive` for an application after the body was read here."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
