"""Cluster mode: an agent's MCP request that reaches another replica than its session's is
proxied to the session's replica.

Agents are given the MCP URL of the replica that runs them, so their calls normally never
cross replicas; but every route must work on every replica (a load balancer in front of the
replicas, an agent whose URL names the cluster's address rather than one replica). An MCP
request cannot travel as one NATS request-reply: `ask_user_question` holds its response open
until the person answers (minutes, hours), and the SDK's streamable HTTP transport may answer
with a server-sent event stream. So it is proxied over HTTP to the owner's advertised address
and the response streamed back as it comes, for as long as it takes. The owner authenticates
the agent (its per-session token travels in the request's headers) and holds the live
waiter; the proxying replica holds nothing but the two sockets.

If the owner cannot be reached before it answers, nothing was delivered: 503
`replica_unavailable` (retryable). If it goes away while the response streams, the stream
ends, exactly as it would had the agent been connected to it directly.
"""

from __future__ import annotations

import asyncio
import logging

import httpx
from starlette.types import Receive, Scope, Send

from clarion.api.carrying import CARRIED_BY, HOP_BY_HOP, read_body
from clarion.api.errors import error_response
from clarion.domain.errors import ReplicaUnavailable
from clarion.ports.cluster import ReplicaInfo

log = logging.getLogger(__name__)

# Not relayed: hop-by-hop headers and the length, and Host, which names this replica.
_NOT_RELAYED = HOP_BY_HOP | {"host"}
# Connecting to the owner is quick or it is not there; the response may take hours.
_TIMEOUT = httpx.Timeout(connect=5.0, read=None, write=30.0, pool=5.0)


class McpToOwner:
    """Proxies an agent's MCP request to the replica that runs its session."""

    def __init__(self, replica_id: str, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._replica_id = replica_id
        # One pool for every proxied stream; a waiting tool call holds one connection.
        self._client = httpx.AsyncClient(
            timeout=_TIMEOUT, limits=httpx.Limits(max_connections=None), transport=transport
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def proxy(self, scope: Scope, receive: Receive, send: Send, owner: ReplicaInfo) -> None:
        query = scope.get("query_string", b"").decode("latin-1")
        url = owner.advertise_url.rstrip("/") + scope["path"] + (f"?{query}" if query else "")
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope.get("headers", ())
            if k.decode("latin-1").lower() not in _NOT_RELAYED
        ]
        headers.append((CARRIED_BY, self._replica_id))
        body = await read_body(receive)
        request = self._client.build_request(scope["method"], url, headers=headers, content=body)
        try:
            upstream = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:  # nothing reached the owner's application
            log.warning(
                "could not proxy an MCP request to the session's replica",
                extra={"replica": self._replica_id, "owner": owner.id, "reason": repr(exc)},
            )
            refusal = ReplicaUnavailable(
                f"the session's replica {owner.id} at {owner.advertise_url} could not be "
                f"reached ({exc!r}); nothing was delivered, retry shortly",
                replica_id=owner.id,
                replica_url=owner.advertise_url,
            )
            await error_response(refusal)(scope, receive, send)
            return
        pump = asyncio.ensure_future(self._relay(upstream, send, owner.id))
        gone = asyncio.ensure_future(_until_disconnected(receive))
        try:
            # An agent that hangs up ends the proxied request too, so the owner sees
            # the same disconnect it would have seen directly.
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, gone):
                task.cancel()
            await asyncio.gather(pump, gone, return_exceptions=True)
            await upstream.aclose()

    async def _relay(self, upstream: httpx.Response, send: Send, owner_id: str) -> None:
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
            # The owner went away mid-response: end the stream, as its own end would.
            log.warning(
                "the session's replica ended a proxied MCP response",
                extra={"replica": self._replica_id, "owner": owner_id, "reason": repr(exc)},
            )
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
