"""Cluster mode: any replica accepts every HTTP API request; the active replica serves it.

Only the active replica runs agents and holds the live waiters, so an answer, a permission
decision, or a read whose result depends on a live waiter can only be served there. A standby
carries each `/api/...` request (method, path, query, headers, body) to the active replica
over request-reply (`ports.cluster.Forwarder`), which runs it through its own application,
authentication included, and relays the reply unchanged: the caller gets exactly the answer it
would have had from the active replica, 200, 409 naming the winner, or a 500 that says whether
a retry is safe.

When the request gets no reply:
- nobody received it (no active replica, or the one known has just gone): the replica list
  is read again and the request sent once more if another replica has become active; otherwise
  503 `standby`, retryable, nothing applied;
- it went out but no reply came before the deadline: 503 `replica_unreachable`, retryable,
  saying it may have been applied. A respond sent again then gets 409 naming the answer that
  won, so retrying never answers twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Coroutine
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.api.errors import error_response
from clarion.domain.errors import ReplicaStandby, ReplicaUnreachable
from clarion.ports.cluster import (
    ClusterView,
    ForwardedReply,
    ForwardedRequest,
    Forwarder,
    ForwardFailed,
    ReplicaInfo,
)

log = logging.getLogger(__name__)

# Marks a request that one replica carried to another; it is never carried again.
FORWARDED_BY = "clarion-forwarded-by"
# What identifies a caller; a WebSocket's own read carries only these.
_CREDENTIALS = frozenset({"authorization", "cookie"})
# How long the active replica's identity is trusted before the replica list is read again.
_ACTIVE_TTL_S = 1.0
# Hop-by-hop headers (and the length, which the relayed body sets again) are not relayed.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "upgrade", "content-length", "te"}
)


def forwarded_by(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == FORWARDED_BY.encode():
            return str(value.decode("latin-1"))
    return None


class ToActiveReplica:
    """The standby side: carries a request to the active replica and relays its reply."""

    def __init__(self, view: ClusterView, forwarder: Forwarder, deadline_s: float) -> None:
        self._view = view
        self._forwarder = forwarder
        self._deadline_s = deadline_s
        self._active: ReplicaInfo | None = None
        self._read_at = float("-inf")
        self._lookup = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = ForwardedRequest(
            method=scope["method"],
            path=scope["path"],
            raw_path=(scope.get("raw_path") or scope["path"].encode()).decode("latin-1"),
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=self._headers(scope),
            body=await read_body(receive),
        )
        reply = await self._forward(request)
        # Sent as a list, not a mapping: a reply may repeat a header (several Set-Cookie).
        headers = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in reply.headers
            if k.lower() not in HOP_BY_HOP
        ]
        headers.append((b"content-length", str(len(reply.body)).encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})

    async def read_for(self, scope: Scope, path: str) -> tuple[int, Any]:
        """A GET of `path` carried to the active replica with the credentials of the connection
        in `scope` (a WebSocket's handshake headers and query): (status, JSON body)."""
        request = ForwardedRequest(
            method="GET",
            path=path,
            raw_path=path,
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=self._headers(scope, keep=_CREDENTIALS),
            body=b"",
        )
        reply = await self._forward(request)
        return reply.status, json.loads(reply.body)

    def _headers(
        self, scope: Scope, keep: frozenset[str] | None = None
    ) -> tuple[tuple[str, str], ...]:
        """The request's headers, marked as carried by this replica (`keep`: only those)."""
        kept = (
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope.get("headers", ())
            if (keep is None or k.decode("latin-1") in keep) and k.decode("latin-1") != FORWARDED_BY
        )
        return (*kept, (FORWARDED_BY, self._view.replica_id))

    async def _forward(self, request: ForwardedRequest) -> ForwardedReply:
        active = await self.active_replica(fresh=False)
        if active is None or active.id == self._view.replica_id:
            # Trusted for a second, the list may date from the middle of a failover, when no
            # other replica was active yet: read it again before refusing.
            active = await self.active_replica(fresh=True)
        unreached: str | None = None
        for _try in range(2):  # once more only if another replica has become active
            if active is None or active.id == self._view.replica_id:
                break
            try:
                return await self._while_alive(
                    active.id, self._forwarder.forward(active.id, request, self._deadline_s)
                )
            except ForwardFailed as exc:
                log.warning(
                    "forwarding failed",
                    extra={
                        "replica": self._view.replica_id,
                        "active": active.id,
                        "path": request.path,
                        "delivered": exc.delivered,
                        "reason": str(exc),
                    },
                )
                if exc.delivered:
                    return _reply(
                        ReplicaUnreachable(
                            f"the active replica {active.id} did not answer ({exc}); the "
                            "request may have been applied. "
                            "Sending it again is safe for an answer or a decision: one "
                            "already recorded is reported as a conflict naming the winner",
                            replica_id=active.id,
                        )
                    )
                previous = active.id
                unreached = str(exc)
                active = await self.active_replica(fresh=True)
                if active is not None and active.id == previous:
                    break
        return _reply(await standby_error(self._view, active, unreached=unreached))

    async def _while_alive(
        self, replica_id: str, reply: Coroutine[Any, Any, ForwardedReply]
    ) -> ForwardedReply:
        """The reply, or ForwardFailed(delivered=True) as soon as `replica_id` is no longer the
        active replica: one that died with the request in hand never replies, and its caller
        should not wait out the whole deadline to learn it."""
        forwarding = asyncio.ensure_future(reply)
        try:
            while True:
                done, _ = await asyncio.wait({forwarding}, timeout=_ACTIVE_TTL_S)
                if done:
                    return forwarding.result()
                active = await self.active_replica(fresh=False)
                if active is None or active.id != replica_id:
                    raise ForwardFailed(
                        f"replica {replica_id} stopped being the active replica before it replied",
                        delivered=True,
                    )
        finally:
            if not forwarding.done():
                forwarding.cancel()
                with contextlib.suppress(asyncio.CancelledError, ForwardFailed):
                    await forwarding

    async def active_replica(self, *, fresh: bool = False) -> ReplicaInfo | None:
        async with self._lookup:
            now = time.monotonic()
            if fresh or now - self._read_at > _ACTIVE_TTL_S:
                try:
                    self._active = await self._view.active()
                except Exception as exc:  # the membership connection failing fences us anyway
                    log.warning("could not read the replica list", extra={"reason": repr(exc)})
                    self._active = None
                self._read_at = now
            return self._active


async def standby_error(
    view: ClusterView, active: ReplicaInfo | None = None, *, unreached: str | None = None
) -> ReplicaStandby:
    """The 503 of a replica that cannot serve a request itself, naming the active replica
    where there is one (and, with `unreached`, why the request could not be carried there:
    nothing was sent, so the same request may be sent again)."""
    if active is None:
        try:
            active = await view.active()
        except Exception:  # the peers' list is a courtesy; the 503 stands without it
            active = None
    if active is None or active.id == view.replica_id:
        where = "no replica is active yet; retry shortly"
        active = None
    elif unreached is not None:
        where = (
            f"the active replica {active.id} at {active.advertise_url} could not be reached "
            f"({unreached}); nothing was applied, retry shortly"
        )
    else:
        where = f"the active replica is {active.id} at {active.advertise_url}"
    return ReplicaStandby(
        f"this replica ({view.replica_id}) is a standby: {where}",
        active_id=None if active is None else active.id,
        active_url=None if active is None else active.advertise_url,
    )


def _reply(error: Exception) -> ForwardedReply:
    response = error_response(error)
    return ForwardedReply(
        status=response.status_code,
        headers=(("content-type", "application/json"),),
        body=bytes(response.body),
    )


async def read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def replay(app: ASGIApp, request: ForwardedRequest) -> ForwardedReply:
    """The active side: run a carried request through this replica's own application."""
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": "http",
        "path": request.path,
        "raw_path": request.raw_path.encode("latin-1"),
        "root_path": "",
        "query_string": request.query.encode("latin-1"),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers],
        "client": None,
        "server": None,
        "state": {},
    }
    sent_body = False
    done = asyncio.Event()
    status = 500
    headers: list[tuple[str, str]] = []
    parts: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": request.body, "more_body": False}
        await done.wait()  # the caller "disconnects" only once the response is complete
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            headers.extend(
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", ())
            )
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    try:
        await app(scope, receive, send)
    except Exception:
        # Starlette re-raises after it has sent its 500; without a response, send one.
        if not done.is_set():
            log.exception("a forwarded request failed", extra={"path": request.path})
            return _reply(RuntimeError("internal"))
    finally:
        done.set()
    return ForwardedReply(status=status, headers=tuple(headers), body=b"".join(parts))
