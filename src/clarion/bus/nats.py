"""NatsBus: the bus on a NATS server (core NATS, at-most-once), for multi-process deployments.

Imported by `clarion.bus` (open_bus) and tests. Each event goes to subject
`<prefix>.<event type>` with the codec's JSON body. One NATS subscription per bus feeds the
local fan-out, so `subscribe()` is synchronous and sees every event published after the call.
Events are notifications that trigger fresh reads; one lost during a NATS outage delays a client
refresh but never loses durable state.
"""

from __future__ import annotations

import logging
import re
import uuid
from types import TracebackType
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from clarion.bus.codec import decode_event, encode_event
from clarion.bus.fanout import BusClosed, Fanout, Subscription
from clarion.bus.unavailable import NatsUnavailable
from clarion.ports import Event

log = logging.getLogger(__name__)

DEFAULT_SUBJECT_PREFIX = "clarion.events"
_TOKENS = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
# Headers that let a bus recognise the echo of its own publications (see `subscribe`).
_ORIGIN = "Clarion-Origin"
_SEQ = "Clarion-Seq"


class NatsBus:
    """Async context manager: connects on enter, closes (ending subscriptions) on exit."""

    def __init__(
        self,
        url: str,
        *,
        subject_prefix: str = DEFAULT_SUBJECT_PREFIX,
        connect_timeout: float = 2.0,
        publish_timeout: float = 5.0,
    ) -> None:
        if not _TOKENS.fullmatch(subject_prefix):
            raise ValueError(f"bad NATS subject prefix {subject_prefix!r}")
        self.url = url
        self.subject_prefix = subject_prefix
        self._connect_timeout = connect_timeout
        self._publish_timeout = publish_timeout
        self._origin = uuid.uuid4().hex
        self._seq = 0  # publications started by this bus
        self._fanout = Fanout()
        self._nc: Client | None = None
        self._closing = False

    @property
    def subscriber_count(self) -> int:
        return len(self._fanout)

    async def __aenter__(self) -> NatsBus:
        nc = Client()
        try:
            # Two quick attempts, so a NATS that is down fails startup in seconds rather than
            # after the client's default minute or two of retries.
            await nc.connect(
                self.url,
                name="clarion",
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
            await nc.subscribe(f"{self.subject_prefix}.>", cb=self._on_message)
            await nc.flush(timeout=max(1, round(self._publish_timeout)))
        except (NatsError, OSError, TimeoutError) as exc:
            self._closing = True
            await nc.close()
            raise NatsUnavailable(f"cannot connect to NATS at {self.url}: {exc!r}") from exc
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
        if nc is not None:
            await nc.close()
        self._fanout.close()

    async def publish(self, event: Event) -> None:
        """Returns once the server acknowledged the event (a flush round trip)."""
        nc = self._nc
        if nc is None:
            raise BusClosed(f"the NATS bus for {self.url} is not open")
        if not _TOKENS.fullmatch(event.type):
            raise ValueError(f"event type {event.type!r} is not a valid NATS subject")
        data = encode_event(event)
        self._seq += 1
        headers = {_ORIGIN: self._origin, _SEQ: str(self._seq)}
        try:
            await nc.publish(f"{self.subject_prefix}.{event.type}", data, headers=headers)
            await nc.flush(timeout=max(1, round(self._publish_timeout)))
        except (NatsError, OSError, TimeoutError) as exc:
            raise NatsUnavailable(
                f"NATS at {self.url} did not accept event {event.type}: {exc!r}"
            ) from exc

    def subscribe(self) -> Subscription:
        # Our own publications started before this call may still be on their way back from the
        # server; the sequence watermark keeps them out so the subscriber sees only later ones.
        return self._fanout.subscribe(after_seq=self._seq)

    async def _on_message(self, msg: Msg) -> None:
        try:
            event = decode_event(msg.data)
        except ValueError as exc:
            log.warning(
                "dropped a malformed bus event",
                extra={"subject": msg.subject, "reason": str(exc)},
            )
            return
        headers = msg.headers or {}
        own_seq: int | None = None
        if headers.get(_ORIGIN) == self._origin:
            try:
                own_seq = int(headers.get(_SEQ, ""))
            except ValueError:
                own_seq = None
        self._fanout.deliver(event, own_seq=own_seq)

    async def _on_error(self, exc: Any) -> None:
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
