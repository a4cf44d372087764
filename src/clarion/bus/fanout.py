"""Local fan-out of events to subscribers: the part every bus implementation shares.

Imported only by the modules of `clarion.bus`. Each subscriber owns an unbounded queue, so a
publisher never waits on a slow consumer. Subscriptions are held weakly: one its consumer dropped
without closing is unsubscribed when it is garbage collected instead of growing forever.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Final

from clarion.ports import Event


class BusClosed(RuntimeError):
    """The bus was closed: publishing is refused and subscriptions end."""


class _End:
    """Queued after the last event of a subscription."""


_END: Final = _End()


class Subscription:
    """An async iterator over the events delivered after it was created, in order.

    `aclose()` (or leaving `async with`) unsubscribes; iteration then stops. If the bus lost its
    connection for good, iteration raises BusClosed after the events already received.
    """

    def __init__(self, fanout: Fanout, listening: Callable[[], Awaitable[None]] | None) -> None:
        self._fanout = fanout
        self._listening = listening
        self._queue: asyncio.Queue[Event | _End] = asyncio.Queue()
        self._finished = False
        self._error: str | None = None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        if self._finished:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, _End):
            self._finished = True
            if self._error is not None:
                raise BusClosed(self._error)
            raise StopAsyncIteration
        return item

    async def listening(self) -> None:
        """Returns once events published by other processes reach this subscription."""
        if self._listening is not None:
            await self._listening()

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """Unsubscribe now; events not yet read are dropped and a pending read ends."""
        self._fanout.discard(self)
        if not self._finished:
            self._drain()
            self._queue.put_nowait(_END)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _put(self, event: Event) -> None:
        self._queue.put_nowait(event)

    def _end(self, error: str | None) -> None:
        self._error = error
        self._queue.put_nowait(_END)

    def _drain(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()


class Fanout:
    """The set of live subscriptions of one bus."""

    def __init__(
        self,
        *,
        listening: Callable[[], Awaitable[None]] | None = None,
        on_empty: Callable[[], None] | None = None,
    ) -> None:
        """`listening`: what a subscription's `listening()` awaits; `on_empty`: called when an
        unsubscription leaves none (one dropped unclosed goes without a call)."""
        self._subscriptions: weakref.WeakSet[Subscription] = weakref.WeakSet()
        self._closed = False
        self._listening = listening
        self._on_empty = on_empty

    def __len__(self) -> int:
        return len(self._subscriptions)

    @property
    def closed(self) -> bool:
        return self._closed

    def subscribe(self) -> Subscription:
        subscription = Subscription(self, self._listening)
        if self._closed:
            subscription._end(None)
        else:
            self._subscriptions.add(subscription)
        return subscription

    def discard(self, subscription: Subscription) -> None:
        had = len(self._subscriptions)
        self._subscriptions.discard(subscription)
        if had and not self._subscriptions and self._on_empty is not None and not self._closed:
            self._on_empty()

    def deliver(self, event: Event) -> None:
        """Queue `event` on every subscription."""
        for subscription in list(self._subscriptions):
            subscription._put(event)

    def close(self, error: str | None = None) -> None:
        """End every subscription after the events already queued; with `error`, iteration
        then raises BusClosed(error) instead of stopping quietly."""
        if self._closed:
            return
        self._closed = True
        for subscription in list(self._subscriptions):
            subscription._end(error)
        self._subscriptions.clear()
