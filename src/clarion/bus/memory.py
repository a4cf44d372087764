"""MemoryBus: the in-process bus (the embedded default, and the bus of service tests).

Imported by `clarion.bus` (open_bus) and tests. Every event goes through the JSON codec, so
subscribers receive exactly what a NATS subscriber would, and a payload that is not JSON-ready
fails here too instead of only in a deployment on NATS.
"""

from __future__ import annotations

from types import TracebackType

from clarion.bus.codec import decode_event, encode_event
from clarion.bus.fanout import BusClosed, Fanout, Subscription
from clarion.ports import Event


class MemoryBus:
    """Publication order is delivery order; `publish` returns once every subscriber has it."""

    def __init__(self) -> None:
        self._fanout = Fanout()

    @property
    def subscriber_count(self) -> int:
        return len(self._fanout)

    async def publish(self, event: Event) -> None:
        if self._fanout.closed:
            raise BusClosed("the in-memory bus is closed")
        # Subscribers share one decoded copy: never the publisher's own (possibly mutable) payload.
        self._fanout.deliver(decode_event(encode_event(event)))

    def subscribe(self) -> Subscription:
        return self._fanout.subscribe()

    async def close(self) -> None:
        self._fanout.close()

    async def __aenter__(self) -> MemoryBus:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
