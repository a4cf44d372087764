"""The Bus contract (ports.Bus), run against every implementation through the `bus` fixture."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from typing import Any

import pytest

from clarion.bus import BusClosed, MemoryBus, NatsBus
from clarion.ports import Event

WAIT_S = 60.0  # a ceiling, never a delay: load makes tests slower, not red


def event(n: int, *, type_: str = "session.message.added", **payload: Any) -> Event:
    return Event(type=type_, task_id="task-1", session_id="sess-1", payload={"n": n, **payload})


async def take(events: AsyncIterator[Event], count: int) -> list[Event]:
    """The next `count` events, or a failure after a bounded wait."""
    received: list[Event] = []
    async with asyncio.timeout(WAIT_S):
        while len(received) < count:
            received.append(await anext(events))
    return received


async def test_events_arrive_in_publication_order(bus: MemoryBus | NatsBus) -> None:
    subscription = bus.subscribe()
    for n in range(1000):
        await bus.publish(event(n))
    received = await take(subscription, 1000)
    assert [e.payload["n"] for e in received] == list(range(1000))


async def test_every_subscriber_receives_every_event(bus: MemoryBus | NatsBus) -> None:
    first, second, third = bus.subscribe(), bus.subscribe(), bus.subscribe()
    sent = [event(n, type_=t) for n, t in enumerate(["a.one", "b.two", "c.three"] * 10)]
    for e in sent:
        await bus.publish(e)
    for subscription in (first, second, third):
        assert await take(subscription, len(sent)) == sent


async def test_subscriber_sees_only_events_published_after_subscribing(
    bus: MemoryBus | NatsBus,
) -> None:
    early = bus.subscribe()
    for n in range(50):
        await bus.publish(event(n))
    late = bus.subscribe()
    await bus.publish(event(50))
    assert [e.payload["n"] for e in await take(late, 1)] == [50]
    # The earlier subscriber shows all 51 arrived, so the late one was not just slow.
    assert len(await take(early, 51)) == 51


async def test_closed_subscription_stops_delivery(bus: MemoryBus | NatsBus) -> None:
    leaving, staying = bus.subscribe(), bus.subscribe()
    await bus.publish(event(0))
    await leaving.aclose()
    await bus.publish(event(1))
    assert bus.subscriber_count == 1
    assert await anext(leaving, None) is None
    assert [e.payload["n"] for e in await take(staying, 2)] == [0, 1]


async def test_leaving_async_with_unsubscribes(bus: MemoryBus | NatsBus) -> None:
    async with bus.subscribe() as subscription:
        await bus.publish(event(0))
        assert len(await take(subscription, 1)) == 1
        assert bus.subscriber_count == 1
    assert bus.subscriber_count == 0


async def test_closing_a_subscription_ends_a_pending_read(bus: MemoryBus | NatsBus) -> None:
    subscription = bus.subscribe()
    reader = asyncio.create_task(anext(subscription, None))
    await asyncio.sleep(0)  # let the reader block on the empty queue
    await subscription.aclose()
    async with asyncio.timeout(WAIT_S):
        assert await reader is None


async def test_a_dropped_subscription_is_unsubscribed(bus: MemoryBus | NatsBus) -> None:
    bus.subscribe()  # never read, never closed
    gc.collect()
    assert bus.subscriber_count == 0


async def test_nested_json_payload_survives(bus: MemoryBus | NatsBus) -> None:
    payload = {
        "message": {"id": "m1", "metadata": {"questions": [{"id": "db", "options": []}]}},
        "pending_action": None,
        "pending_action_revision": {"epoch": "12345678901234567890", "sequence": 7},
        "flags": [True, False, 1, 2.5, "x", None],
        "unicode": 'é 中 \u2028 "quoted"',
    }
    subscription = bus.subscribe()
    sent = Event(type="session.message.added", task_id="t", session_id="s", payload=payload)
    await bus.publish(sent)
    (received,) = await take(subscription, 1)
    assert received == sent
    assert received.payload is not payload  # subscribers never share the publisher's object


async def test_publish_refuses_a_payload_that_is_not_json(bus: MemoryBus | NatsBus) -> None:
    subscription = bus.subscribe()
    with pytest.raises(ValueError, match=r"payload\.when"):
        await bus.publish(
            Event(type="x.y", task_id="t", session_id=None, payload={"when": object()})
        )
    await bus.publish(event(1))
    assert [e.payload["n"] for e in await take(subscription, 1)] == [1]


async def test_closing_the_bus_ends_subscriptions_and_refuses_publish(
    bus: MemoryBus | NatsBus,
) -> None:
    subscription = bus.subscribe()
    await bus.publish(event(0))
    await take(subscription, 1)
    await bus.close()
    assert await anext(subscription, None) is None
    with pytest.raises(BusClosed):
        await bus.publish(event(1))
    assert await anext(bus.subscribe(), None) is None


async def test_publishers_never_wait_for_a_slow_subscriber(bus: MemoryBus | NatsBus) -> None:
    unread = bus.subscribe()
    async with asyncio.timeout(WAIT_S):
        for n in range(2000):
            await bus.publish(event(n))
    assert [e.payload["n"] for e in await take(unread, 2000)] == list(range(2000))


async def test_a_publish_in_flight_when_subscribing_is_not_delivered(
    bus: MemoryBus | NatsBus,
) -> None:
    in_flight = asyncio.create_task(bus.publish(event(0)))
    await asyncio.sleep(0)  # the publish has started (on NATS it awaits the server's ack)
    late = bus.subscribe()
    await in_flight
    await bus.publish(event(1))
    assert [e.payload["n"] for e in await take(late, 1)] == [1]
