"""Cluster mode: an agent's MCP request that reaches a standby is proxied to the active replica.

Agents are given the MCP URL of the replica that runs them, so their calls normally never
reach a standby; but every route must work on every replica (a load balancer in front of
the replicas, an agent whose URL names the cluster's address rather than one replica). An
MCP request cannot travel as one NATS request-reply: `ask_user_question` holds its response
open until the person answers (minutes, hours), and the SDK's streamable HTTP transport may
answer with a server-sent event stream. So the standby proxies it over HTTP to the active
replica's advertised address and streams the response back as it comes, for as long as it
takes. The active replica authenticates the agent (its per-session token travels in the
request's headers) and holds the live waiter; the standby holds nothing but the two sockets.

If the active replica cannot be reached before it answers, nothing was delivered: 503
`standby` (retryable). If it goes away while the response streams, the stream ends, exactly
as it would had the agent been connected to it directly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import httpx
from starlette.types import Receive, Scope, Send

from clarion.api.errors import error_response
from clarion.api.forwarding import FORWARDED_BY, HOP_BY_HOP, read_body
from clarion.domain.errors import ReplicaStandby
from clarion.ports.cluster import ReplicaInfo

log = logging.getLogger(__name__)

# Not relayed: hop-by-hop headers and the length, and Host, which names this replica.
_NOT_RELAYED = HOP_BY_HOP | {"host"}
# Connecting to the active replica is quick or it is not there; the response may take hours.
_TIMEOUT = httpx.Timeout(connect=5.0, read=None, write=30.0, pool=5.0)


class McpToActive:
    """The standby side of an agent's MCP request."""

    def __init__(
        self,
        replica_id: str,
        active: Callable[[], Awaitable[ReplicaInfo | None]],
        refused: Callable[[ReplicaInfo | None, str], Awaitable[ReplicaStandby]],
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._replica_id = replica_id
        self._active = active
        self._refused = refused
        # One pool for every proxied stream; a waiting tool call holds one connection.
        self._client = httpx.AsyncClient(
            timeout=_TIMEOUT, limits=httpx.Limits(max_connections=None), transport=transport
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        active = await self._active()
        if active is None or active.id == self._replica_id:
            refusal = await self._refused(None, "no replica is active")
            await error_response(refusal)(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        url = active.advertise_url.rstrip("/") + scope["path"] + (f"?{query}" if query else "")
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope.get("headers", ())
            if k.decode("latin-1").lower() not in _NOT_RELAYED
        ]
        headers.append((FORWARDED_BY, self._replica_id))
        body = await read_body(receive)
        request = self._client.build_request(scope["method"], url, headers=headers, content=body)
        try:
            upstream = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:  # nothing reached the active replica's application
            log.warning(
                "could not proxy an MCP request to the active replica",
                extra={"replica": self._replica_id, "active": active.id, "reason": repr(exc)},
            )
            await error_response(await self._refused(active, repr(exc)))(scope, receive, send)
            return
        pump = asyncio.ensure_future(self._relay(upstream, send, active.id))
        gone = asyncio.ensure_future(_until_disconnected(receive))
        try:
            # An agent that hangs up ends the proxied request too, so the active replica sees
            # the same disconnect it would have seen directly.
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, gone):
                task.cancel()
            await asyncio.gather(pump, gone, return_exceptions=True)
            await upstream.aclose()

    async def _relay(self, upstream: httpx.Response, send: Send, active_id: str) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": upstream.status_code,
                "headers": [
                    (k.encode("latin-1"), v.encode("latin-1"))
                    for k, v in upstream.headers.multi_items()
                    if k.lower() not in _NOT_RELAYED
                ],
            }
        )
        try:
            async for chunk in upstream.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError as exc:
            # The active replica went away mid-response: end the stream, as its own end would.
            log.warning(
                "the active replica ended a proxied MCP response",
                extra={"replica": self._replica_id, "active": active_id, "reason": repr(exc)},
            )
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
