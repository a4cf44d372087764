"""The deliverer's webhook channel through the real services, on both databases, against a real HTTP
receiver on loopback: a hanging receiver never slows the request that caused the event, failed
and timed-out attempts are retried under the same delivery id and body, and a delivery is given
up after the configured number of attempts."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from clarion.config.webhooks import DeliveryPolicy, Webhook
from tests.lifecycle.harness import Lifecycle, answer_db, fast_settings, lifecycle_on

SECRET = "k"
WAIT_S = 60.0  # a ceiling, never a delay


@dataclass
class Receiver:
    """Answers each POST with the next queued status (then `default`); `hang` never answers."""

    statuses: deque[int | str] = field(default_factory=deque)
    default: int | str = 204
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    port: int = 0
    _writers: list[asyncio.StreamWriter] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        headers = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if ": " in line)
        body = await reader.readexactly(int(headers.get("Content-Length", "0")))
        async with self.arrived:
            self.requests.append((headers, body))
            self.arrived.notify_all()
        status = self.statuses.popleft() if self.statuses else self.default
        if status == "hang":
            return  # the connection stays open and silent
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode())
        await writer.drain()
        writer.close()

    async def wait_for(self, count: int) -> None:
        async with self.arrived:
            await asyncio.wait_for(
                self.arrived.wait_for(lambda: len(self.requests) >= count), WAIT_S
            )

    def close(self) -> None:
        for writer in self._writers:
            writer.close()


@contextlib.asynccontextmanager
async def receiving(receiver: Receiver) -> AsyncIterator[Receiver]:
    server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
    receiver.port = server.sockets[0].getsockname()[1]
    try:
        yield receiver
    finally:
        receiver.close()
        server.close()


@contextlib.asynccontextmanager
async def hooked(
    store_url: str, receiver: Receiver, *, attempts: int = 10, timeout_s: float = 5.0
) -> AsyncIterator[Lifecycle]:
    policy = DeliveryPolicy(
        backoff_s=0.02, max_delay_s=0.05, attempts=attempts, timeout_s=timeout_s
    )
    async with receiving(receiver):
        settings = dataclasses.replace(
            fast_settings(store_url),
            webhooks=(Webhook(receiver.url, SECRET),),
            delivery_policy=policy,
        )
        async with lifecycle_on(settings) as life:
            yield life


async def _deliveries(life: Lifecycle) -> list[Any]:
    return await life.app.stores.probes.list_deliveries()


async def _until(life: Lifecycle, check: Any) -> list[Any]:
    """The outbox rows once `check` holds (the deliverer records after the receiver answered,
    which the test cannot observe otherwise), within a ceiling."""
    async with asyncio.timeout(WAIT_S):
        while True:
            rows = await _deliveries(life)
            if check(rows):
                return rows
            await asyncio.sleep(0.01)


async def test_a_receiver_that_never_answers_does_not_slow_the_question_or_its_answer(
    store_url: str,
) -> None:
    # The receiver holds every request open, and an attempt may take 60 s: were the question or
    # its answer waiting on a delivery, they could not finish within the 10 s ceilings below.
    receiver = Receiver(default="hang")
    async with hooked(store_url, receiver, timeout_s=60.0) as life:
        _, session_id = await life.start_session()
        async with asyncio.timeout(WAIT_S):
            call, pending_id = await life.ask(session_id)
        await receiver.wait_for(1)  # the delivery is in flight, unanswered
        async with asyncio.timeout(WAIT_S):
            await life.app.services.resolver.respond(pending_id, answer_db())
            await call
        [first] = [json.loads(body) for _, body in receiver.requests[:1]]
        assert first["event"] == "clarification.requested"
        [row, *_] = await _deliveries(life)
        assert row.delivered_at is None and row.gave_up_at is None, "still in flight"


async def test_failed_and_timed_out_attempts_are_retried_with_the_same_id_and_body(
    store_url: str,
) -> None:
    receiver = Receiver(statuses=deque([500, "hang", 503]))
    async with hooked(store_url, receiver, timeout_s=1.0) as life:
        _, session_id = await life.start_session()
        call, _ = await life.ask(session_id)
        await receiver.wait_for(4)
        [row] = await _until(life, lambda rows: rows and rows[0].delivered_at is not None)
        call.cancel()
    # Four attempts (500, a timeout, 503, then 2xx); on a loaded machine a 2xx may also come
    # back after the attempt's deadline and be tried again: every attempt is counted and sent
    # the same delivery.
    assert row.attempts == len(receiver.requests) >= 4 and row.last_error is None
    ids = {headers["X-Clarion-Delivery"] for headers, _ in receiver.requests}
    bodies = {body for _, body in receiver.requests}
    assert ids == {row.id} and bodies == {row.body.encode()}


async def test_a_delivery_is_given_up_after_the_configured_attempts(store_url: str) -> None:
    receiver = Receiver(default=500)
    async with hooked(store_url, receiver, attempts=10) as life:
        _, session_id = await life.start_session()
        call, _ = await life.ask(session_id)
        [row] = await _until(life, lambda rows: rows and rows[0].gave_up_at is not None)
        call.cancel()
    assert row.attempts == 10 and row.last_error == "HTTP 500" and row.delivered_at is None
    assert len(receiver.requests) == 10
