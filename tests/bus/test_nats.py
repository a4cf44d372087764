"""What only the NATS bus does: connect errors, several processes on one server, foreign bytes."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client

import clarion.bus
from clarion.bus import MemoryBus, NatsBus, NatsUnavailable, encode_event, open_bus
from clarion.ports import Event

from .conftest import unique_prefix

CEILING_S = 60.0  # a ceiling for waits, never a delay


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_nats_that_is_down_fails_fast_naming_the_url() -> None:
    url = f"nats://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(NatsUnavailable, match=url):
        async with NatsBus(url):
            pass
    assert time.monotonic() - started < 15


class MuteNats:
    """A NATS server that answers PINGs until it is told to stop (`answering`), and reads
    everything it is sent."""

    def __init__(self) -> None:
        self.received = b""
        self.answering = True
        self._more = asyncio.Condition()
        self.url = ""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b'INFO {"server_id":"mute","version":"2.10.0","proto":1,"headers":true,'
            b'"max_payload":1048576}\r\n'
        )
        while data := await reader.read(65536):
            async with self._more:
                self.received += data
                self._more.notify_all()
            if self.answering and b"PING\r\n" in data:
                writer.write(b"PONG\r\n" * data.count(b"PING\r\n"))
                await writer.drain()
        writer.close()

    async def until_received(self, fragment: bytes) -> None:
        async with self._more:
            await self._more.wait_for(lambda: fragment in self.received)


@contextlib.asynccontextmanager
async def mute_nats() -> AsyncIterator[MuteNats]:
    mute = MuteNats()
    server = await asyncio.start_server(mute.serve, "127.0.0.1", 0)
    mute.url = f"nats://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield mute
    finally:
        server.close()


async def test_publish_hands_the_event_to_the_server_without_waiting_for_a_round_trip() -> None:
    # A PING/PONG per event cost ~0.15 ms of CPU each, several per cycle, and during an outage
    # held every request that published for the whole flush timeout. The server still gets
    # the event: the client writes it at once.
    async with mute_nats() as server, NatsBus(server.url, flush_timeout=CEILING_S * 2) as bus:
        server.answering = False
        event = Event(type="a.b", task_id="t", session_id=None, payload={"n": 1})
        async with asyncio.timeout(CEILING_S):
            await bus.publish(event)
            await server.until_received(b"PUB clarion.events.a.b ")
        assert encode_event(event) in server.received


async def test_publish_before_connecting_is_refused() -> None:
    bus = NatsBus("nats://127.0.0.1:4222")
    with pytest.raises(RuntimeError, match="not open"):
        await bus.publish(Event(type="a.b", task_id="t", session_id=None, payload={}))


def test_open_bus_picks_the_implementation_from_the_url() -> None:
    assert isinstance(open_bus("memory"), MemoryBus)
    nats_bus = open_bus("nats://127.0.0.1:4222", subject_prefix="x.y")
    assert isinstance(nats_bus, NatsBus)
    assert nats_bus.subject_prefix == "x.y"


def test_open_bus_defaults_to_the_clarion_events_prefix() -> None:
    bus = open_bus("nats://127.0.0.1:4222")
    assert isinstance(bus, NatsBus) and bus.subject_prefix == "clarion.events"


def test_a_server_on_the_in_process_bus_does_not_import_the_nats_client() -> None:
    probe = (
        "import sys, clarion.server.serving, clarion.bus; clarion.bus.open_bus('memory'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'nats'))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert found.stdout.strip() == "[]"
    assert clarion.bus.NatsBus is NatsBus  # asked for, it is there
    assert not hasattr(clarion.bus, "NoSuchBus")


@pytest.mark.parametrize("url", ["", "nats://", "redis://localhost", "Memory", "http://x"])
def test_open_bus_rejects_other_urls(url: str) -> None:
    with pytest.raises(ValueError, match="unsupported bus URL"):
        open_bus(url)


@pytest.mark.parametrize("prefix", ["", "a..b", "a.*", "a.>", "has space", ".a"])
def test_a_bad_subject_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="subject prefix"):
        NatsBus("nats://127.0.0.1:4222", subject_prefix=prefix)


@pytest.mark.nats
async def test_an_event_type_that_is_not_a_subject_is_refused(nats_url: str) -> None:
    async with NatsBus(nats_url, subject_prefix=unique_prefix()) as bus:
        with pytest.raises(ValueError, match="not a valid NATS subject"):
            await bus.publish(Event(type="a b", task_id="t", session_id=None, payload={}))


@pytest.mark.nats
async def test_buses_on_one_server_and_prefix_see_each_others_events(nats_url: str) -> None:
    prefix = unique_prefix()
    async with (
        NatsBus(nats_url, subject_prefix=prefix) as one,
        NatsBus(nats_url, subject_prefix=prefix) as two,
        NatsBus(nats_url, subject_prefix=unique_prefix()) as elsewhere,
    ):
        on_two, on_elsewhere = two.subscribe(), elsewhere.subscribe()
        await on_two.listening()
        sent = Event(
            type="session.state_changed",
            task_id="t",
            session_id="s",
            payload={"state": "IDLE"},
        )
        await one.publish(sent)
        async with asyncio.timeout(CEILING_S):
            assert await anext(on_two) == sent
        await elsewhere.publish(Event(type="marker", task_id="t", session_id=None, payload={}))
        async with asyncio.timeout(CEILING_S):
            assert (await anext(on_elsewhere)).type == "marker"


@pytest.mark.nats
async def test_foreign_bytes_on_the_subject_are_dropped(nats_url: str) -> None:
    prefix = unique_prefix()
    raw = Client()
    await raw.connect(nats_url)
    try:
        async with NatsBus(nats_url, subject_prefix=prefix) as bus:
            subscription = bus.subscribe()
            await subscription.listening()
            await raw.publish(f"{prefix}.junk", b"not json")
            await raw.publish(f"{prefix}.junk", b'{"type": "x"}')
            good = Event(type="after.junk", task_id="t", session_id=None, payload={})
            await raw.publish(f"{prefix}.after.junk", encode_event(good))
            await raw.flush()
            async with asyncio.timeout(CEILING_S):
                assert await anext(subscription) == good
    finally:
        await raw.close()


def delivered_to(bus: NatsBus) -> int:
    """Messages the NATS server has delivered to `bus`'s connection."""
    assert bus._nc is not None
    return int(bus._nc.stats["in_msgs"])


async def settled(*buses: NatsBus) -> None:
    """Every message the server routed to these buses before now has reached them: the server
    writes a connection's messages in order, a PONG after what was routed before its PING."""
    for bus in buses:
        assert bus._nc is not None
        await bus._nc.flush()
        await bus._nc.flush()


@pytest.mark.nats
async def test_a_bus_without_subscribers_is_sent_no_events(nats_url: str) -> None:
    prefix = unique_prefix()
    async with (
        NatsBus(nats_url, subject_prefix=prefix) as one,
        NatsBus(nats_url, subject_prefix=prefix) as idle,
    ):
        for n in range(3):
            await one.publish(Event(type="a.b", task_id="t", session_id=None, payload={"n": n}))
        await settled(one, idle)
        assert delivered_to(idle) == 0


@pytest.mark.nats
async def test_a_bus_is_not_sent_its_own_events_back(nats_url: str) -> None:
    async with NatsBus(nats_url, subject_prefix=unique_prefix()) as bus:
        subscription = bus.subscribe()
        await subscription.listening()
        sent = Event(type="a.b", task_id="t", session_id=None, payload={})
        await bus.publish(sent)
        async with asyncio.timeout(CEILING_S):
            assert await anext(subscription) == sent
        await settled(bus)
        assert delivered_to(bus) == 0


@pytest.mark.nats
async def test_a_bus_stops_listening_when_its_last_subscriber_leaves(nats_url: str) -> None:
    prefix = unique_prefix()
    async with (
        NatsBus(nats_url, subject_prefix=prefix) as one,
        NatsBus(nats_url, subject_prefix=prefix) as two,
    ):
        first = two.subscribe()
        await first.listening()
        await one.publish(Event(type="a.b", task_id="t", session_id=None, payload={"n": 0}))
        async with asyncio.timeout(CEILING_S):
            assert (await anext(first)).payload == {"n": 0}
        await first.aclose()
        await settled(two)
        before = delivered_to(two)
        await one.publish(Event(type="a.b", task_id="t", session_id=None, payload={"n": 1}))
        await settled(one, two)
        assert delivered_to(two) == before
        # And listens again for a new subscriber, from where it is.
        again = two.subscribe()
        await again.listening()
        await one.publish(Event(type="a.b", task_id="t", session_id=None, payload={"n": 2}))
        async with asyncio.timeout(CEILING_S):
            assert (await anext(again)).payload == {"n": 2}


@pytest.mark.nats
async def test_an_event_published_once_a_subscriber_listens_arrives_every_time(
    nats_url: str,
) -> None:
    # Each round starts a new NATS subscription (the last one ended with its subscriber), so
    # each round races the subscription's SUB against the other bus's publication.
    prefix = unique_prefix()
    async with (
        NatsBus(nats_url, subject_prefix=prefix) as one,
        NatsBus(nats_url, subject_prefix=prefix) as two,
    ):
        for n in range(300):
            subscription = two.subscribe()
            await subscription.listening()
            await one.publish(Event(type="a.b", task_id="t", session_id=None, payload={"n": n}))
            async with asyncio.timeout(CEILING_S):
                assert (await anext(subscription)).payload == {"n": n}
            await subscription.aclose()
