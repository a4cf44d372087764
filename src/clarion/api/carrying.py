"""Cluster mode: carrying an HTTP API request to the replica that must serve it, and serving
one carried here.

A request that acts on a session (an answer, a decision, a prompt) must run on the replica
that runs the session's agent and holds its live waiters (api/routing.py decides which). The
request (method, path, query, headers, body) travels to that replica over request-reply
(`ports.cluster.CarryTransport`), which runs it through its own application, authentication
included, and the reply is relayed unchanged: the caller gets exactly the answer it would
have had from the owner, 200, 409 naming the winner, or a 500 that says whether a retry is
safe. A carried request is marked and never carried again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.api.errors import error_response
from clarion.ports.cluster import (
    CarriedReply,
    CarriedRequest,
    CarryFailed,
    CarryTransport,
    Directory,
)
from clarion.ports.metrics import NO_METRICS, Metrics
from clarion.ports.tracing import NO_TRACER, Tracer

log = logging.getLogger(__name__)

# Marks a request that one replica carried to another; it is never carried again. The
# header keeps its first name, so that replicas of two versions (a rolling restart) still
# recognise each other's carried requests.
CARRIED_BY = "clarion-forwarded-by"
# How often a carrier checks that the replica holding its request still lives.
_ALIVE_CHECK_S = 1.0
# Hop-by-hop headers (and the length, which the relayed body sets again) are not relayed.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "upgrade", "content-length", "te"}
)


def carried_by(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == CARRIED_BY.encode():
            return str(value.decode("latin-1"))
    return None


def carried_request(scope: Scope, body: bytes, replica_id: str) -> CarriedRequest:
    """The request in `scope`, marked as carried by `replica_id`."""
    headers = tuple(
        (k.decode("latin-1"), v.decode("latin-1"))
        for k, v in scope.get("headers", ())
        if k.decode("latin-1") != CARRIED_BY
    )
    return CarriedRequest(
        method=scope["method"],
        path=scope["path"],
        raw_path=(scope.get("raw_path") or scope["path"].encode()).decode("latin-1"),
        query=scope.get("query_string", b"").decode("latin-1"),
        headers=(*headers, (CARRIED_BY, replica_id)),
        body=body,
    )


async def send_reply(reply: CarriedReply, send: Send) -> None:
    # Sent as a list, not a mapping: a reply may repeat a header (several Set-Cookie).
    headers = [
        (k.encode("latin-1"), v.encode("latin-1"))
        for k, v in reply.headers
        if k.lower() not in HOP_BY_HOP
    ]
    headers.append((b"content-length", str(len(reply.body)).encode()))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


class RequestCarrier:
    """Carries a request to one replica and waits for its reply, but no longer than that
    replica lives: one that died with the request in hand never replies, and its caller
    should not wait out the whole deadline to learn it."""

    def __init__(
        self,
        transport: CarryTransport,
        directory: Directory,
        deadline_s: float,
        metrics: Metrics = NO_METRICS,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self._metrics = metrics
        self._tracer = tracer
        self._transport = transport
        self._directory = directory
        self._deadline_s = deadline_s

    async def carry(self, replica_id: str, request: CarriedRequest) -> CarriedReply:
        """The reply; CarryFailed(may_have_applied=False) if nobody received it, (True) if it
        went out and the replica died or the deadline passed before it replied."""
        self._metrics.carried_request()
        with self._tracer.span("request.carry") as span:
            span.set("replica", replica_id)
            span.set("path", request.path)
            # The owner continues this trace (the context travels in the request's headers).
            reply = await self._carry(
                replica_id, dataclasses.replace(request, trace=self._tracer.carrier())
            )
            span.set("outcome", reply.status)
            return reply

    async def _carry(self, replica_id: str, request: CarriedRequest) -> CarriedReply:
        in_flight = asyncio.ensure_future(
            self._transport.carry(replica_id, request, self._deadline_s)
        )
        try:
            while True:
                done, _ = await asyncio.wait({in_flight}, timeout=_ALIVE_CHECK_S)
                if done:
                    return in_flight.result()
                if await self._gone(replica_id):
                    raise CarryFailed(
                        f"replica {replica_id} stopped before it replied", may_have_applied=True
                    )
        finally:
            if not in_flight.done():
                in_flight.cancel()
                with contextlib.suppress(asyncio.CancelledError, CarryFailed):
                    await in_flight

    async def _gone(self, replica_id: str) -> bool:
        try:
            return await self._directory.is_gone(replica_id)
        except Exception as exc:  # the store failing is not the peer dying; keep waiting
            log.warning("could not check a replica's liveness", extra={"reason": repr(exc)})
            return False


def error_reply(error: Exception) -> CarriedReply:
    response = error_response(error)
    return CarriedReply(
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


async def replay(app: ASGIApp, request: CarriedRequest) -> CarriedReply:
    """The serving side: run a carried request through this replica's own application."""
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
            log.exception("a carried request failed", extra={"path": request.path})
            return error_reply(RuntimeError("internal"))
    finally:
        done.set()
    return CarriedReply(status=status, headers=tuple(headers), body=b"".join(parts))
