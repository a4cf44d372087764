"""A click queued on one replica is announced on the bus, and every replica's answerer wakes on
the word (only on it: other events wake nothing); a bus that refuses the word costs nothing but
a log line, as the answerer's fallback look still finds the click. The cross-replica path over
NATS is tests/e2e/test_cluster_slack.py."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import cast

import pytest

from clarion.bus.memory import MemoryBus
from clarion.domain.models import Bundle
from clarion.domain.slack import SlackInteraction
from clarion.ports import Event
from clarion.slack.wakeups import INTERACTION_QUEUED, announce_queued, hear_queued

CLICK = SlackInteraction(
    id="k1", pending_id="p1", slack_user="U1", user="alice", channel="C1", message_ts="1.1",
    body="{}",
)  # fmt: skip
BUNDLE = cast(
    Bundle, SimpleNamespace(pending_id="p1", session=SimpleNamespace(id="s1", task_id="t1"))
)


async def _subscribed(bus: MemoryBus, count: int) -> None:
    """Let the listeners' tasks run up to their subscription (no time passes)."""
    for _ in range(1000):
        if bus.subscriber_count >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError("the listeners never subscribed")


async def test_a_queued_click_wakes_every_replicas_answerer_and_nothing_else_does() -> None:
    bus = MemoryBus()
    woken = [asyncio.Event(), asyncio.Event()]
    listeners = [asyncio.create_task(hear_queued(bus, w.set)) for w in woken]
    try:
        await _subscribed(bus, 2)
        await bus.publish(Event("session.message.added", "t1", "s1", {}))
        await announce_queued(bus, CLICK, BUNDLE)
        await asyncio.wait_for(asyncio.gather(*(w.wait() for w in woken)), 30)
    finally:
        for listener in listeners:
            listener.cancel()
        await asyncio.gather(*listeners, return_exceptions=True)
    assert bus.subscriber_count == 0  # each listener let go of its subscription


async def test_only_the_word_of_a_queued_click_wakes_the_answerer() -> None:
    bus = MemoryBus()
    wakes: list[str] = []
    sub = bus.subscribe()  # what every replica hears
    listener = asyncio.create_task(hear_queued(bus, lambda: wakes.append("woken")))
    try:
        await _subscribed(bus, 2)
        await bus.publish(Event("session.message.added", "t1", "s1", {}))
        await bus.publish(Event("task.created", "t1", None, {}))
        await announce_queued(bus, CLICK, BUNDLE)
        heard = [await anext(sub) for _ in range(3)]
        # The listener takes its events in the same order: once the last one woke it, every
        # earlier one was handled; further turns of the loop let any extra wake show.
        for _ in range(1000):
            await asyncio.sleep(0)
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await sub.aclose()
    assert wakes == ["woken"]
    word = heard[-1]
    assert word.type == INTERACTION_QUEUED
    assert word.payload == {"interaction_id": "k1", "pending_id": "p1"}
    assert (word.task_id, word.session_id) == ("t1", "s1")


async def test_a_bus_that_refuses_the_word_is_logged_and_raises_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = MemoryBus()
    await bus.close()
    with caplog.at_level(logging.WARNING, logger="clarion.slack.wakeups"):
        await announce_queued(bus, CLICK, BUNDLE)
    assert "not announced" in caplog.text
