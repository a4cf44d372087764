"""Request-reply between replicas over a real NATS server (bus/replica_requests.py)."""

from __future__ import annotations

import asyncio
import socket
import uuid

import pytest

from clarion.bus.replica_requests import nats_carry_transport
from clarion.ports.cluster import CarriedReply, CarriedRequest, CarryFailed

pytestmark = pytest.mark.nats


def _request(path: str = "/api/v1/tasks", body: bytes = b"") -> CarriedRequest:
    return CarriedRequest(
        method="POST",
        path=path,
        raw_path=path,
        query="a=1&b=%C3%A9",
        headers=(("authorization", "Bearer t"), ("x-note", "caf\u00e9")),
        body=body,
    )


async def test_a_request_and_its_reply_cross_unchanged(nats_url: str) -> None:
    seen: list[CarriedRequest] = []

    async def handler(request: CarriedRequest) -> CarriedReply:
        seen.append(request)
        return CarriedReply(201, (("content-type", "application/json"),), b'{"ok":true}')

    replica = str(uuid.uuid4())
    async with nats_carry_transport(nats_url) as server, nats_carry_transport(nats_url) as client:
        await server.serve(replica, handler)
        reply = await client.carry(replica, _request(body=b'{"x":1}'), 30)
    assert reply == CarriedReply(201, (("content-type", "application/json"),), b'{"ok":true}')
    assert seen == [_request(body=b'{"x":1}')]


async def test_a_request_sent_the_moment_serving_starts_is_answered_every_time(
    nats_url: str,
) -> None:
    # With a flush alone, a run of a thousand always had some meet "no responders" here:
    # the subscription had not reached the server yet.
    async def handler(request: CarriedRequest) -> CarriedReply:
        return CarriedReply(200, (), request.body)

    async with nats_carry_transport(nats_url) as server, nats_carry_transport(nats_url) as client:
        for attempt in range(1000):
            replica = str(uuid.uuid4())
            await server.serve(replica, handler)
            reply = await client.carry(replica, _request(body=str(attempt).encode()), 30)
            assert reply.body == str(attempt).encode()


async def test_a_reply_larger_than_the_nats_payload_limit_arrives_whole(nats_url: str) -> None:
    async with nats_carry_transport(nats_url) as server, nats_carry_transport(nats_url) as client:
        big = bytes(range(256)) * (server._nc.max_payload // 256 * 3 + 7)

        async def handler(request: CarriedRequest) -> CarriedReply:
            return CarriedReply(200, (), big)

        replica = str(uuid.uuid4())
        await server.serve(replica, handler)
        reply = await client.carry(replica, _request(), 30)
    assert reply.body == big


async def test_a_replica_nobody_serves_fails_at_once_as_never_applied(nats_url: str) -> None:
    async with nats_carry_transport(nats_url) as client:
        with pytest.raises(CarryFailed) as failed:
            await client.carry(str(uuid.uuid4()), _request(), 60)
    assert failed.value.may_have_applied is False


async def test_a_request_without_a_reply_in_time_fails_as_possibly_applied(nats_url: str) -> None:
    never = asyncio.Event()

    async def handler(request: CarriedRequest) -> CarriedReply:
        await never.wait()
        raise AssertionError("unreachable")

    replica = str(uuid.uuid4())
    async with nats_carry_transport(nats_url) as server, nats_carry_transport(nats_url) as client:
        await server.serve(replica, handler)
        with pytest.raises(CarryFailed) as failed:
            await client.carry(replica, _request(), 0.3)
    assert failed.value.may_have_applied is True


async def test_a_slow_request_does_not_hold_up_the_next_one(nats_url: str) -> None:
    release = asyncio.Event()

    async def handler(request: CarriedRequest) -> CarriedReply:
        if request.path == "/slow":
            await release.wait()
        return CarriedReply(200, (), request.path.encode())

    replica = str(uuid.uuid4())
    async with nats_carry_transport(nats_url) as server, nats_carry_transport(nats_url) as client:
        await server.serve(replica, handler)
        slow = asyncio.ensure_future(client.carry(replica, _request("/slow"), 60))
        fast = await client.carry(replica, _request("/fast"), 60)
        assert fast.body == b"/fast" and not slow.done()
        release.set()
        assert (await slow).body == b"/slow"


async def test_an_unreachable_nats_fails_fast_naming_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"nats://127.0.0.1:{port}"
    with pytest.raises(ConnectionError, match=url):
        async with nats_carry_transport(url):
            pass


async def test_replies_to_requests_in_flight_together_each_reach_their_own_request(
    nats_url: str,
) -> None:
    arrived: list[int] = []
    all_in = asyncio.Event()
    turns = [asyncio.Event() for _ in range(50)]

    async def handler(request: CarriedRequest) -> CarriedReply:
        n = int(request.body)
        arrived.append(n)
        if len(arrived) == len(turns):
            all_in.set()
        await turns[n].wait()
        if n > 0:
            turns[n - 1].set()  # the later requests are answered first: the replies cross
        return CarriedReply(200, (), request.body)

    async def release() -> None:
        await all_in.wait()
        turns[-1].set()

    replica = str(uuid.uuid4())
    async with nats_carry_transport(nats_url) as server, nats_carry_transport(nats_url) as client:
        await server.serve(replica, handler)
        releaser = asyncio.create_task(release())
        replies = await asyncio.gather(
            *(client.carry(replica, _request(body=str(n).encode()), 60) for n in range(50))
        )
        await releaser
    assert [r.body for r in replies] == [str(n).encode() for n in range(50)]
