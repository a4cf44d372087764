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


class Bus(Protocol):
    async def publish(self, event: Event) -> None:
        """Returns once the bus accepted the event; raises if it could not."""
        ...

    def subscribe(self) -> AsyncIterator[Event]:
        """Every event published after the call, in publication order."""
        ...
