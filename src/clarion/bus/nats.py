"""NatsBus: the bus on a NATS server (core NATS, at-most-once), for multi-process deployments.

Imported by `clarion.bus` (open_bus) and tests. Each event goes to subject
`<prefix>.<event type>` as the codec's JSON body, with no NATS headers. A bus delivers its own
events to its subscribers itself, at publication, and the NATS server does not send them back
(the connection is `no_echo`). It listens to the other processes' events only while it has a
subscriber: one NATS subscription feeds the local fan-out from the first subscriber on, and ends
once none is left, so a process nobody watches (a replica without WebSocket clients) receives
no event at all. An event is decoded only when it arrives for a subscriber. Events are
notifications that trigger fresh reads; one lost during a NATS outage delays a client refresh
but never loses durable state.
"""

from __future__ import annotations

import asyncio
import logging
import re
from types import TracebackType
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription as NatsSubscription
from nats.errors import Error as NatsError

from clarion.bus.codec import decode_event, encode_event
from clarion.bus.fanout import BusClosed, Fanout, Subscription
from clarion.bus.unavailable import NatsUnavailable
from clarion.ports import Event

log = logging.getLogger(__name__)

DEFAULT_SUBJECT_PREFIX = "clarion.events"
_TOKENS = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")


class NatsBus:
    """Async context manager: connects on enter, closes (ending subscriptions) on exit."""

    def __init__(
        self,
        url: str,
        *,
        subject_prefix: str = DEFAULT_SUBJECT_PREFIX,
        connect_timeout: float = 2.0,
        flush_timeout: float = 5.0,  # a round trip to the server: connecting, subscribing
    ) -> None:
        if not _TOKENS.fullmatch(subject_prefix):
            raise ValueError(f"bad NATS subject prefix {subject_prefix!r}")
        self.url = url
        self.subject_prefix = subject_prefix
        self._connect_timeout = connect_timeout
        self._flush_timeout = flush_timeout
        self._fanout = Fanout(listening=self._listening, on_empty=self._stop_listening)
        self._nc: Client | None = None
        self._closing = False
        # The NATS subscription feeding the fan-out while it has subscribers: the task that
        # makes it (done once the server routes the subject here), and the subscription.
        self._listen: asyncio.Task[None] | None = None
        self._sub: NatsSubscription | None = None
        self._unsubscribing: set[asyncio.Task[None]] = set()
        # The first connect's errors: the client reports one per attempt, and the same
        # refusal logged once per attempt read as two failures.
        self._connect_errors: list[Any] | None = None

    @property
    def subscriber_count(self) -> int:
        return len(self._fanout)

    async def __aenter__(self) -> NatsBus:
        nc = Client()
        self._connect_errors = []
        try:
            # Two quick attempts, so a NATS that is down fails startup in seconds rather than
            # after the client's default minute or two of retries.
            await nc.connect(
                self.url,
                name="clarion",
                no_echo=True,  # this bus hands its own events to its subscribers itself
                connect_timeout=max(1, round(self._connect_timeout)),
                max_reconnect_attempts=1,
                reconnect_time_wait=0.2,  # type: ignore[arg-type]
                error_cb=self._on_error,
                disconnected_cb=self._on_disconnected,
                reconnected_cb=self._on_reconnected,
                closed_cb=self._on_closed,
            )
            # Once connected, ride out server restarts: reconnect for as long as we run.
            nc.options["max_reconnect_attempts"] = -1
            nc.options["reconnect_time_wait"] = 2
            await nc.flush(timeout=max(1, round(self._flush_timeout)))
        except (NatsError, OSError, TimeoutError) as exc:
            self._closing = True
            await nc.close()
            # The client's last word is NoServersError; the attempts' own error says why.
            errors, self._connect_errors = self._connect_errors or [exc], None
            raise NatsUnavailable(f"cannot connect to NATS at {self.url}: {errors[-1]!r}") from exc
        self._connect_errors = None
        self._nc = nc
        log.info("connected to NATS", extra={"bus_url": self.url})
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        self._closing = True
        nc, self._nc = self._nc, None
        listen, self._listen = self._listen, None
        if listen is not None:
            listen.cancel()
            await asyncio.gather(listen, return_exceptions=True)
        if nc is not None:
            await nc.close()
        self._fanout.close()

    async def publish(self, event: Event) -> None:
        """Hands `event` to this bus's subscribers, then to the NATS client, whose flusher
        writes it to the server at once. No round trip per event: a PING/PONG cost more CPU
        than the publication itself, and during an outage held every request that published
        an event for the whole timeout. While the client reconnects it buffers events (and
        sends them once reconnected); NatsUnavailable when that buffer is full or the
        connection has closed for good."""
        nc = self._nc
        if nc is None:
            raise BusClosed(f"the NATS bus for {self.url} is not open")
        if not _TOKENS.fullmatch(event.type):
            raise ValueError(f"event type {event.type!r} is not a valid NATS subject")
        data = encode_event(event)
        if len(self._fanout):
            # Subscribers share one decoded copy: never the publisher's own (possibly mutable)
            # payload, and exactly what another process's subscribers receive.
            self._fanout.deliver(decode_event(data))
        try:
            await nc.publish(f"{self.subject_prefix}.{event.type}", data)
        except (NatsError, OSError) as exc:
            raise NatsUnavailable(
                f"NATS at {self.url} did not accept event {event.type}: {exc!r}"
            ) from exc

    def subscribe(self) -> Subscription:
        subscription = self._fanout.subscribe()
        if self._listen is None and self._nc is not None and not self._fanout.closed:
            self._listen = asyncio.get_running_loop().create_task(
                self._start_listening(self._nc), name="nats-bus-listen"
            )
        return subscription

    async def _listening(self) -> None:
        listen = self._listen
        if listen is not None:
            await asyncio.shield(listen)

    async def _start_listening(self, nc: Client) -> None:
        """Subscribe to every event subject, and return once the NATS server routes them here.
        One flush is not proof: nats-py writes a flush's PING straight to the socket, ahead
        of the SUB still in its buffer, which its flusher writes on its next turn. By the time
        that first PONG is back the SUB is written, so the second PONG follows it."""
        timeout = max(1, round(self._flush_timeout))
        this = asyncio.current_task()

        async def on_message(msg: Msg) -> None:
            # Only while this subscription is the bus's: one being ended may still hand over
            # what it had received.
            if self._listen is this:
                self._receive(msg)

        try:
            self._sub = await nc.subscribe(f"{self.subject_prefix}.>", cb=on_message)
            await nc.flush(timeout=timeout)
            await nc.flush(timeout=timeout)
        except (NatsError, OSError, TimeoutError) as exc:
            # The client resubscribes once it reconnects; until then events are missed, as in
            # any outage.
            log.warning(
                "could not confirm the bus's NATS subscription",
                extra={"bus_url": self.url, "reason": repr(exc)},
            )

    def _stop_listening(self) -> None:
        """The last subscriber left: end the NATS subscription (unless it is still being made:
        the next event that arrives for nobody ends it)."""
        listen, sub = self._listen, self._sub
        if len(self._fanout) or listen is None or not listen.done():
            return
        self._listen, self._sub = None, None
        if sub is None or self._nc is None:
            return
        task = asyncio.get_running_loop().create_task(self._unsubscribe(sub))
        self._unsubscribing.add(task)
        task.add_done_callback(self._unsubscribing.discard)

    async def _unsubscribe(self, sub: NatsSubscription) -> None:
        try:
            await sub.unsubscribe()
        except (NatsError, OSError) as exc:
            log.info("bus NATS unsubscribe failed", extra={"reason": repr(exc)})

    def _receive(self, msg: Msg) -> None:
        if not len(self._fanout):  # its last subscriber was dropped unclosed
            self._stop_listening()
            return
        try:
            event = decode_event(msg.data)
        except ValueError as exc:
            log.warning(
                "dropped a malformed bus event",
                extra={"subject": msg.subject, "reason": str(exc)},
            )
            return
        self._fanout.deliver(event)

    async def _on_error(self, exc: Any) -> None:
        connecting = self._connect_errors
        if connecting is not None:
            connecting.append(exc)
            if any(repr(seen) == repr(exc) for seen in connecting[:-1]):
                return  # the same error on the connect's next attempt
        log.warning("NATS client error", extra={"bus_url": self.url, "reason": repr(exc)})

    async def _on_disconnected(self) -> None:
        if not self._closing:
            log.warning("disconnected from NATS", extra={"bus_url": self.url})

    async def _on_reconnected(self) -> None:
        log.info("reconnected to NATS", extra={"bus_url": self.url})

    async def _on_closed(self) -> None:
        if not self._closing:
            log.error("NATS connection closed for good", extra={"bus_url": self.url})
            self._nc = None
            self._fanout.close(f"the connection to NATS at {self.url} closed")
