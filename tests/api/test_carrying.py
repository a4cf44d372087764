"""Carrying a request between replicas (api/carrying.py), in process: the request as the
owner's application sees it, its reply relayed unchanged, and the RequestCarrier that waits for that
reply no longer than the owner lives."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any, cast

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from clarion.api import carrying
from clarion.api.carrying import (
    CARRIED_BY,
    RequestCarrier,
    carried_request,
    replay,
    send_reply,
)
from clarion.ports.cluster import CarriedReply, CarriedRequest, CarryFailed, Directory

CEILING_S = 30  # a hang guard, far above what any of these takes


def _owner_app() -> FastAPI:
    app = FastAPI()

    @app.post("/api/v1/echo")
    async def echo(request: Request) -> dict[str, Any]:
        return {
            "body": (await request.body()).decode(),
            "query": request.url.query,
            "raw_path": request.scope["raw_path"].decode(),
            "auth": request.headers.get("authorization"),
            "by": request.headers.getlist(CARRIED_BY),
        }

    @app.get("/api/v1/conflict")
    async def conflict() -> PlainTextResponse:
        return PlainTextResponse("taken", status_code=409, headers={"x-winner": "b"})

    @app.post("/api/v1/login")
    async def login() -> PlainTextResponse:
        response = PlainTextResponse("in")
        response.set_cookie("session", "s1")
        response.set_cookie("csrf", "c1")
        return response

    return app


def _scope(
    method: str, path: str, query: bytes = b"", headers: dict[str, str] | None = None
) -> Scope:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": [(k.encode(), v.encode()) for k, v in (headers or {}).items()],
    }


class Sent:
    """A `send` that keeps what it is given."""

    def __init__(self) -> None:
        self.messages: list[MutableMapping[str, Any]] = []

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        self.messages.append(message)


async def test_a_carried_request_runs_through_the_owners_app_as_the_caller_sent_it() -> None:
    scope = _scope("POST", "/api/v1/echo", b"x=1&y=%C3%A9", {"authorization": "Bearer t"})
    request = carried_request(scope, b'{"k":"v"}', "me")
    reply = await replay(_owner_app(), request)
    assert reply.status == 200
    assert json.loads(reply.body) == {
        "body": '{"k":"v"}',
        "query": "x=1&y=%C3%A9",
        "raw_path": "/api/v1/echo",
        "auth": "Bearer t",  # the owner authenticates the caller itself
        "by": ["me"],
    }


async def test_a_request_keeps_only_the_mark_of_the_replica_that_carries_it() -> None:
    scope = _scope("POST", "/api/v1/echo", headers={CARRIED_BY: "someone-else"})
    request = carried_request(scope, b"", "me")
    assert [v for k, v in request.headers if k == CARRIED_BY] == ["me"]


async def test_the_owners_reply_is_relayed_unchanged_status_headers_and_body() -> None:
    reply = await replay(
        _owner_app(), carried_request(_scope("GET", "/api/v1/conflict"), b"", "me")
    )
    sent = Sent()
    await send_reply(reply, sent)
    start, body = sent.messages
    assert start["status"] == 409
    assert (b"x-winner", b"b") in start["headers"]
    assert (b"content-length", b"5") in start["headers"]
    assert body == {"type": "http.response.body", "body": b"taken"}


async def test_a_reply_that_repeats_a_header_is_relayed_with_every_copy() -> None:
    reply = await replay(_owner_app(), carried_request(_scope("POST", "/api/v1/login"), b"", "me"))
    sent = Sent()
    await send_reply(reply, sent)
    cookies = [v for k, v in sent.messages[0]["headers"] if k == b"set-cookie"]
    assert cookies == [b"session=s1; Path=/; SameSite=lax", b"csrf=c1; Path=/; SameSite=lax"]
    assert sent.messages[1]["body"] == b"in"


async def test_hop_by_hop_headers_of_a_reply_are_not_relayed_and_the_length_is_set_again() -> None:
    reply = CarriedReply(
        status=200,
        headers=(("Connection", "keep-alive"), ("Content-Length", "999"), ("x-kept", "1")),
        body=b"abc",
    )
    sent = Sent()
    await send_reply(reply, sent)
    assert sent.messages[0]["headers"] == [(b"x-kept", b"1"), (b"content-length", b"3")]


async def test_an_owner_app_that_fails_before_replying_gives_a_500() -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    reply = await replay(broken, carried_request(_scope("GET", "/api/v1/x"), b"", "me"))
    assert reply.status == 500
    assert b'"code":"internal"' in reply.body


class Liveness:
    """The one part of a Directory a RequestCarrier reads: whether a replica is gone."""

    def __init__(self) -> None:
        self.gone: set[str] = set()
        self.failing: Exception | None = None
        self.checks = 0
        self.checked = asyncio.Event()

    async def is_gone(self, replica_id: str) -> bool:
        self.checks += 1
        self.checked.set()
        if self.failing is not None:
            raise self.failing
        return replica_id in self.gone

    async def until_checked(self, times: int) -> None:
        while self.checks < times:
            self.checked.clear()
            await self.checked.wait()


class Held:
    """A transport whose request went out and waits for a reply that comes when told."""

    def __init__(self) -> None:
        self.reply: asyncio.Future[CarriedReply] = asyncio.get_running_loop().create_future()
        self.deadlines: list[float] = []
        self.cancelled = asyncio.Event()

    async def carry(
        self, replica_id: str, request: CarriedRequest, timeout_s: float
    ) -> CarriedReply:
        self.deadlines.append(timeout_s)
        try:
            return await self.reply
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


REQUEST = CarriedRequest("POST", "/api/v1/x", "/api/v1/x", "", (), b"{}")
REPLY = CarriedReply(200, (("content-type", "text/plain"),), b"done")


@pytest.fixture(autouse=True)
def _quick_liveness_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(carrying, "_ALIVE_CHECK_S", 0.01)


def _carrier(transport: Any, liveness: Liveness, deadline_s: float = 3600.0) -> RequestCarrier:
    return RequestCarrier(transport, cast(Directory, liveness), deadline_s)


async def test_a_carrier_returns_the_replicas_reply() -> None:
    transport, liveness = Held(), Liveness()
    transport.reply.set_result(REPLY)
    assert await _carrier(transport, liveness, 12.5).carry("a", REQUEST) == REPLY
    assert transport.deadlines == [12.5]


async def test_a_request_nobody_received_fails_as_never_applied() -> None:
    class Nobody:
        async def carry(
            self, replica_id: str, request: CarriedRequest, timeout_s: float
        ) -> CarriedReply:
            raise CarryFailed("no responders", may_have_applied=False)

    with pytest.raises(CarryFailed) as failed:
        await _carrier(Nobody(), Liveness()).carry("a", REQUEST)
    assert failed.value.may_have_applied is False


async def test_the_carrier_gives_up_as_soon_as_the_replica_holding_the_request_is_gone() -> None:
    transport, liveness = Held(), Liveness()
    carrying = asyncio.ensure_future(_carrier(transport, liveness).carry("a", REQUEST))
    await asyncio.wait_for(liveness.until_checked(1), CEILING_S)
    assert not carrying.done()  # alive: still waiting for the reply
    liveness.gone.add("a")
    # The deadline is an hour: only the liveness check can end this within the ceiling.
    # (asyncio.wait, unlike wait_for, does not cancel it at the ceiling: that would end it too.)
    done, _ = await asyncio.wait({carrying}, timeout=CEILING_S)
    assert carrying in done
    with pytest.raises(CarryFailed) as failed:
        await carrying
    assert failed.value.may_have_applied is True  # it went out: it may have been applied
    assert "a stopped before it replied" in str(failed.value)
    assert transport.cancelled.is_set()  # the request in flight is given up, not leaked


async def test_a_store_error_while_checking_liveness_keeps_the_carrier_waiting() -> None:
    transport, liveness = Held(), Liveness()
    liveness.failing = OSError("database unreachable")
    carrying = asyncio.ensure_future(_carrier(transport, liveness).carry("a", REQUEST))
    await asyncio.wait_for(liveness.until_checked(2), CEILING_S)
    assert not carrying.done()  # the store failing is not the replica dying
    transport.reply.set_result(REPLY)
    assert await asyncio.wait_for(carrying, CEILING_S) == REPLY
