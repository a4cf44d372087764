"""Local fan-out details the bus contract suite cannot reach without breaking a server."""

from __future__ import annotations

import pytest

from clarion.bus import BusClosed
from clarion.bus.fanout import Fanout
from clarion.ports import Event

EVENT = Event(type="a.b", task_id="t", session_id=None, payload={})


async def test_a_lost_connection_ends_subscriptions_with_bus_closed_after_queued_events() -> None:
    fanout = Fanout()
    subscription = fanout.subscribe()
    fanout.deliver(EVENT)
    fanout.close("the connection to NATS at nats://x closed")
    assert await anext(subscription) == EVENT
    with pytest.raises(BusClosed, match="nats://x"):
        await anext(subscription)
    assert await anext(subscription, None) is None  # ended for good, no second error


async def test_the_last_unsubscription_is_announced_once() -> None:
    emptied: list[int] = []
    fanout = Fanout(on_empty=lambda: emptied.append(len(fanout)))
    first, second = fanout.subscribe(), fanout.subscribe()
    first.close()
    assert emptied == []
    second.close()
    second.close()
    assert emptied == [0]
