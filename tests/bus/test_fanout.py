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


async def test_own_echoes_up_to_the_watermark_are_skipped() -> None:
    fanout = Fanout()
    subscription = fanout.subscribe(after_seq=3)
    fanout.deliver(EVENT, own_seq=3)
    fanout.deliver(Event(type="own.later", task_id="t", session_id=None, payload={}), own_seq=4)
    fanout.deliver(Event(type="foreign", task_id="t", session_id=None, payload={}))
    fanout.close()
    assert [e.type async for e in subscription] == ["own.later", "foreign"]
