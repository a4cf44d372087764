"""The event bus seam: facts published after they are durable."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Event:
    """A fact that happened, published after it is durable.

    `type` is the wire action (`session.message.added`, ...). `payload` is JSON-ready.
    Events are notifications only: no subscriber reacts to one in a way the publisher must
    order against (the watchdog is armed synchronously, never through the bus), so an event
    carries no "already handled" marker.
    """

    type: str
    task_id: str
    session_id: str | None
    payload: Mapping[str, Any]


class BusSubscription(Protocol):
    """An async iterator over events; `aclose()` ends it."""

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __anext__(self) -> Event: ...

    async def listening(self) -> None:
        """Returns once events published by other processes reach this subscription (at once
        on an in-process bus). Never raises: a bus that cannot listen yet catches up when it
        can, as after any outage."""
        ...

    async def aclose(self) -> None: ...


class Bus(Protocol):
    async def publish(self, event: Event) -> None:
        """Returns once the bus accepted the event; raises if it could not."""
        ...

    def subscribe(self) -> BusSubscription:
        """Every event this process publishes after the call, in publication order, and, once
        `listening()` returned, every event other processes publish."""
        ...
