"""Request-reply between cluster replicas over NATS: how a request reaches the replica that
must serve it.

Each replica listens on `clarion.replicas.<its id>.http`. A request travels as one message (its
body the payload, everything else one JSON header); the reply comes back to a private inbox in
one or more messages, so a reply larger than the NATS server's payload limit is split rather
than refused. NATS tells a sender at once when nobody listens on a subject (a "no responders"
status), which is how a request to a replica that is gone fails without waiting out its
deadline, and known not to have been received.

Imported by the composition root only; the HTTP edge sees `ports.cluster.CarryTransport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError

from clarion.bus.unavailable import NatsUnavailable
from clarion.ports.cluster import CarriedReply, CarriedRequest, CarryFailed

log = logging.getLogger(__name__)

SUBJECT = "clarion.replicas.{replica}.http"
_REQUEST = "Clarion-Request"
_REPLY = "Clarion-Reply"
_MORE = "Clarion-More"
# A request that only proves this replica's subscription is in place (see `until_served`).
_PROBE = "Clarion-Probe"
# Every header of a request is its trace context but these.
_OWN = "Clarion-"
_SUBSCRIBE_CEILING_S = 30.0
# Room left in each reply message for the NATS headers (status, response headers).
_HEADER_ROOM = 16 * 1024

Handler = Callable[[CarriedRequest], Awaitable[CarriedReply]]


def is_probe(msg: Msg) -> bool:
    """A request sent by `until_served`: answer it with an empty reply, and nothing else."""
    return bool((msg.headers or {}).get(_PROBE))


async def until_served(nc: Client, subject: str) -> None:
    """Return once the NATS server routes `subject` to this connection's subscription, whose
    callback answers probes (`is_probe`). A flush does not prove it: nats-py writes a flush's
    PING straight to the socket, ahead of a SUB still waiting in its buffer, so the PONG can
    come back before the server has the subscription, and a request sent then meets "no
    responders". A request that the subscription itself answers proves it."""
    deadline = asyncio.get_running_loop().time() + _SUBSCRIBE_CEILING_S
    while True:
        try:
            await nc.request(subject, b"", timeout=_SUBSCRIBE_CEILING_S, headers={_PROBE: "1"})
            return
        except NoRespondersError:
            # The SUB was still in the buffer; the flusher has written it by now or will with
            # the next command, so ask again (each try is one round trip).
            if asyncio.get_running_loop().time() > deadline:
                raise


class _Replies:
    """One subscription for the replies to every request this replica sends: a request's reply
    subject is `<inbox>.<n>`, and the messages that come back on it go to that request's
    queue. A subscription per request cost a SUB, an UNSUB and the client's bookkeeping of a
    subscription for every request carried."""

    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._prefix = nc.new_inbox()
        self._count = 0
        self._waiting: dict[str, asyncio.Queue[Msg]] = {}

    async def start(self) -> None:
        # Before any request: its SUB reaches the server ahead of every request's PUB.
        await self._nc.subscribe(f"{self._prefix}.*", cb=self._route)

    async def _route(self, msg: Msg) -> None:
        queue = self._waiting.get(msg.subject)
        if queue is not None:  # else a reply that came after its request gave up
            queue.put_nowait(msg)

    @contextlib.contextmanager
    def expect(self) -> Iterator[tuple[str, asyncio.Queue[Msg]]]:
        """A reply subject of its own, and the queue its messages arrive on."""
        self._count += 1
        subject = f"{self._prefix}.{self._count}"
        queue: asyncio.Queue[Msg] = asyncio.Queue()
        self._waiting[subject] = queue
        try:
            yield subject, queue
        finally:
            del self._waiting[subject]


class NatsCarryTransport:
    """A NATS connection of its own: serves this replica's subject, carries to others'."""

    def __init__(self, nc: Client, url: str) -> None:
        self._nc = nc
        self._url = url
        self._running: set[asyncio.Task[None]] = set()
        self._replies = _Replies(nc)

    async def start(self) -> None:
        await self._replies.start()

    @property
    def client(self) -> Client:
        """The connection, for the replica's other request-reply subjects (waiter_queries.py)."""
        return self._nc

    async def serve(self, replica_id: str, handler: Handler) -> None:
        """Answer requests sent to `replica_id`, each in its own task: one slow request (a
        detached answer waits for its agent) must not hold up the others."""

        async def on_request(msg: Msg) -> None:
            if is_probe(msg):
                await msg.respond(b"")
                return
            task = asyncio.create_task(self._answer(msg, handler), name="carried-request")
            self._running.add(task)
            task.add_done_callback(self._running.discard)

        subject = SUBJECT.format(replica=replica_id)
        await self._nc.subscribe(subject, cb=on_request)
        await until_served(self._nc, subject)

    async def carry(
        self, replica_id: str, request: CarriedRequest, timeout_s: float
    ) -> CarriedReply:
        nc = self._nc
        with self._replies.expect() as (inbox, replies):
            try:
                await nc.publish(
                    SUBJECT.format(replica=replica_id),
                    request.body,
                    reply=inbox,
                    # The trace context as headers of their own (`traceparent`, ...), where
                    # any NATS-aware tracing would look for them.
                    headers={**request.trace, _REQUEST: _request_header(request)},
                )
            except (NatsError, OSError) as exc:
                raise CarryFailed(
                    f"could not send the request to replica {replica_id}: {exc!r}",
                    may_have_applied=False,
                ) from exc
            return await _collect(replies, replica_id, timeout_s)

    async def _answer(self, msg: Msg, handler: Handler) -> None:
        try:
            request = _parse_request(msg)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("dropped a malformed carried request", extra={"reason": repr(exc)})
            return
        reply = await handler(request)
        limit = max(1024, self._nc.max_payload - _HEADER_ROOM)
        body = reply.body
        chunks = [body[i : i + limit] for i in range(0, len(body), limit)] or [b""]
        head = json.dumps({"status": reply.status, "headers": list(reply.headers)})
        try:
            for index, chunk in enumerate(chunks):
                headers = {_REPLY: head} if index == 0 else {}
                if index < len(chunks) - 1:
                    headers[_MORE] = "1"
                # No flush (a PING/PONG round trip per request): the client's flusher writes
                # the reply at once, and a reply that never arrives is the sender's deadline.
                await self._nc.publish(msg.reply, chunk, headers=headers)
        except (NatsError, OSError) as exc:
            # The sender times out and says the request may have been applied, which it was.
            log.warning(
                "could not reply to a carried request",
                extra={"path": request.path, "reason": repr(exc)},
            )

    async def close(self) -> None:
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        await self._nc.close()


async def _collect(replies: asyncio.Queue[Msg], replica_id: str, timeout_s: float) -> CarriedReply:
    deadline = asyncio.get_running_loop().time() + timeout_s
    head: dict[str, Any] | None = None
    parts: list[bytes] = []
    while True:
        try:
            async with asyncio.timeout_at(deadline):
                msg = await replies.get()
        except TimeoutError as exc:
            raise CarryFailed(
                f"replica {replica_id} did not answer within {timeout_s:g} s",
                may_have_applied=True,
            ) from exc
        headers = msg.headers or {}
        if headers.get("Status") == "503":  # NATS: no subscriber on the subject
            raise CarryFailed(f"replica {replica_id} is not listening", may_have_applied=False)
        if head is None:
            head = json.loads(headers[_REPLY])
        parts.append(msg.data)
        if headers.get(_MORE) != "1":
            return CarriedReply(
                status=int(head["status"]),
                headers=tuple((str(k), str(v)) for k, v in head["headers"]),
                body=b"".join(parts),
            )


def _request_header(request: CarriedRequest) -> str:
    # ensure_ascii: a NATS header value is one line of ASCII.
    return json.dumps(
        {
            "method": request.method,
            "path": request.path,
            "raw_path": request.raw_path,
            "query": request.query,
            "headers": list(request.headers),
        },
        ensure_ascii=True,
    )


def _parse_request(msg: Msg) -> CarriedRequest:
    headers = msg.headers or {}
    meta = json.loads(headers[_REQUEST])
    if not msg.reply:
        raise ValueError("a carried request without a reply subject")
    return CarriedRequest(
        method=str(meta["method"]),
        path=str(meta["path"]),
        raw_path=str(meta["raw_path"]),
        query=str(meta["query"]),
        headers=tuple((str(k), str(v)) for k, v in meta["headers"]),
        body=msg.data,
        trace={k: v for k, v in headers.items() if not k.startswith(_OWN)},
    )


@contextlib.asynccontextmanager
async def nats_carry_transport(
    url: str, *, connect_timeout: float = 2.0
) -> AsyncIterator[NatsCarryTransport]:
    """Connect (failing fast when NATS is down, as the bus does), then stay connected."""
    nc = Client()
    # The first connect's errors: the client reports one per attempt; the same one is
    # logged once, and the last names the cause (the client's own last word is only
    # NoServersError).
    connecting: list[Exception] | None = []

    async def on_error(exc: Exception) -> None:  # one line; the client's default is a traceback
        if connecting is not None:
            connecting.append(exc)
            if any(repr(seen) == repr(exc) for seen in connecting[:-1]):
                return
        log.warning("NATS client error (carrying)", extra={"bus_url": url, "reason": repr(exc)})

    try:
        await nc.connect(
            url,
            name="clarion-carrying",
            error_cb=on_error,
            connect_timeout=max(1, round(connect_timeout)),
            max_reconnect_attempts=1,
            reconnect_time_wait=0.2,  # type: ignore[arg-type]
        )
    except (NatsError, OSError, TimeoutError) as exc:
        await nc.close()
        cause = connecting[-1] if connecting else exc
        raise NatsUnavailable(f"cannot connect to NATS at {url}: {cause!r}") from exc
    connecting = None
    nc.options["max_reconnect_attempts"] = -1
    nc.options["reconnect_time_wait"] = 2
    transport = NatsCarryTransport(nc, url)
    try:
        await transport.start()
        yield transport
    finally:
        await transport.close()
