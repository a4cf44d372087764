"""Asking a replica which questions its live waiters hold, over a real NATS server
(bus/waiter_queries.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from clarion.bus.waiter_queries import WAITERS_SUBJECT, ask_waiters, serve_waiters
from clarion.ports.cluster import CarryFailed

pytestmark = pytest.mark.nats


Connect = Callable[[], Awaitable[Client]]
Live = Callable[[Sequence[str]], set[str]]
_PROBE = b"probe"


@pytest.fixture
async def connect(nats_url: str) -> AsyncIterator[Connect]:
    """Open connections through `await connect()`; all are closed after the test."""
    opened: list[Client] = []

    async def open_one() -> Client:
        nc = Client()
        await nc.connect(nats_url, max_reconnect_attempts=1)
        opened.append(nc)
        return nc

    yield open_one
    for nc in opened:
        await nc.close()


async def _impostor(
    server: Client, client: Client, replica: str, answer: Callable[[Msg], Awaitable[None]]
) -> None:
    """Serve `replica`'s subject with `answer` (a misbehaving replica), returning once the
    subscription is in place: a probe it answers proves it, as a flush would not."""

    async def on_request(msg: Msg) -> None:
        if msg.data == _PROBE:
            await msg.respond(b"")
            return
        await answer(msg)

    subject = WAITERS_SUBJECT.format(replica=replica)
    await server.subscribe(subject, cb=on_request)
    while True:
        try:
            await client.request(subject, _PROBE, timeout=5)
            return
        except NoRespondersError:
            continue


def _holding(*held: str) -> tuple[list[list[str]], Live]:
    asked: list[list[str]] = []

    def live(pending_ids: Sequence[str]) -> set[str]:
        asked.append(list(pending_ids))
        return set(held).intersection(pending_ids)

    return asked, live


async def test_a_served_replica_answers_which_of_the_ids_its_waiters_hold(connect: Connect) -> None:
    server, client = await connect(), await connect()
    asked, live = _holding("p1", "p3", "elsewhere")
    replica = str(uuid.uuid4())
    await serve_waiters(server, replica, live)
    assert await ask_waiters(client, replica, ["p1", "p2", "p3"], 5) == {"p1", "p3"}
    assert asked == [["p1", "p2", "p3"]]


async def test_a_question_sent_the_moment_serving_starts_is_answered_every_time(
    connect: Connect,
) -> None:
    server, client = await connect(), await connect()
    _, live = _holding("p")
    for _ in range(200):
        replica = str(uuid.uuid4())
        await serve_waiters(server, replica, live)
        assert await ask_waiters(client, replica, ["p"], 5) == {"p"}


async def test_a_replica_nobody_serves_fails_at_once_as_never_applied(connect: Connect) -> None:
    client = await connect()
    started = time.monotonic()
    with pytest.raises(CarryFailed) as failed:
        await ask_waiters(client, str(uuid.uuid4()), ["p1"], 30)
    assert time.monotonic() - started < 5
    assert failed.value.may_have_applied is False


async def test_a_replica_that_does_not_answer_in_time_fails(connect: Connect) -> None:
    silent, client = await connect(), await connect()
    replica = str(uuid.uuid4())

    async def never_answers(msg: Msg) -> None:
        return None

    await _impostor(silent, client, replica, never_answers)
    with pytest.raises(CarryFailed) as failed:
        await ask_waiters(client, replica, ["p1"], 0.3)
    assert failed.value.may_have_applied is True


async def test_an_answer_never_names_ids_that_were_not_asked_about(connect: Connect) -> None:
    liar, client = await connect(), await connect()
    replica = str(uuid.uuid4())

    async def claims_everything(msg: Msg) -> None:
        await msg.respond(b'["p1", "not-asked"]')

    await _impostor(liar, client, replica, claims_everything)
    assert await ask_waiters(client, replica, ["p1", "p2"], 5) == {"p1"}


async def test_a_malformed_answer_fails_the_question(connect: Connect) -> None:
    broken, client = await connect(), await connect()
    replica = str(uuid.uuid4())

    async def garbles(msg: Msg) -> None:
        await msg.respond(b'{"p1": true}')

    await _impostor(broken, client, replica, garbles)
    with pytest.raises(CarryFailed):
        await ask_waiters(client, replica, ["p1"], 5)


async def test_a_malformed_question_is_dropped_and_the_replica_keeps_serving(
    connect: Connect,
) -> None:
    server, client = await connect(), await connect()
    asked, live = _holding("p1")
    replica = str(uuid.uuid4())
    await serve_waiters(server, replica, live)
    subject = WAITERS_SUBJECT.format(replica=replica)
    with pytest.raises(NatsTimeout):
        await client.request(subject, b"not json", timeout=0.3)
    assert await ask_waiters(client, replica, ["p1"], 5) == {"p1"}
    assert asked == [["p1"]]


async def test_a_question_without_a_reply_subject_is_dropped_and_the_replica_keeps_serving(
    connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    server, client = await connect(), await connect()
    asked, live = _holding("p1")
    replica = str(uuid.uuid4())
    await serve_waiters(server, replica, live)
    caplog.set_level("WARNING", logger="clarion.bus.waiter_queries")

    await client.publish(WAITERS_SUBJECT.format(replica=replica), b'["p1"]')  # no reply inbox
    # Requests on one subscription are handled in order: once this is answered, the
    # publication before it was handled too.
    assert await ask_waiters(client, replica, ["p1"], 5) == {"p1"}
    assert asked == [["p1"]]
    assert "dropped a live-waiter question without a reply subject" in caplog.text


async def test_asking_over_a_closed_connection_fails_as_never_applied(connect: Connect) -> None:
    client = await connect()
    await client.close()
    with pytest.raises(CarryFailed) as failed:
        await ask_waiters(client, str(uuid.uuid4()), ["p1"], 5)
    assert failed.value.may_have_applied is False
