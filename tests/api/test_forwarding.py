"""A standby replica's HTTP edge in process: what it serves itself, what it carries to the
active replica (api/forwarding.py), and what the caller gets when no reply comes."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from clarion.api.app import ReadinessGate
from clarion.api.forwarding import FORWARDED_BY, ToActiveReplica, replay
from clarion.ports.cluster import (
    ForwardedReply,
    ForwardedRequest,
    ForwardFailed,
    ReplicaInfo,
    Role,
)


def _info(replica_id: str) -> ReplicaInfo:
    now = datetime.now(UTC)
    return ReplicaInfo(replica_id, f"http://{replica_id}:8787", "active", now, now, 0)


class View:
    """A standby named `me` whose list says `active` is the active replica."""

    def __init__(self, active: str | None) -> None:
        self.replica_id = "me"
        self.role: Role = "standby"
        self.active_id = active
        self.reads = 0

    async def replicas(self) -> list[ReplicaInfo]:
        return [] if self.active_id is None else [_info(self.active_id)]

    async def active(self) -> ReplicaInfo | None:
        self.reads += 1
        return None if self.active_id is None else _info(self.active_id)


def _active_app() -> FastAPI:
    app = FastAPI()

    @app.post("/api/v1/echo")
    async def echo(request: Request) -> dict[str, Any]:
        return {
            "body": (await request.body()).decode(),
            "query": request.url.query,
            "auth": request.headers.get("authorization"),
            "by": request.headers.get(FORWARDED_BY),
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


class Replay:
    """A forwarder that hands each request to in-process apps by replica id."""

    def __init__(self, apps: dict[str, FastAPI], fail: Callable[[str], None] | None = None):
        self.apps = apps
        self.fail = fail
        self.sent: list[str] = []

    async def forward(
        self, replica_id: str, request: ForwardedRequest, timeout_s: float
    ) -> ForwardedReply:
        self.sent.append(replica_id)
        if self.fail is not None:
            self.fail(replica_id)
        return await replay(self.apps[replica_id], request)


def _standby_client(view: View, forwarder: Any) -> httpx.AsyncClient:
    local = FastAPI()

    @local.get("/static/app.js")
    async def static() -> PlainTextResponse:
        return PlainTextResponse("served here")

    async def proxied_mcp(scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse(f"proxied {scope['path']}", 202)(scope, receive, send)

    services = types.SimpleNamespace(
        ready=asyncio.Event(),
        cluster=view,
        to_active=ToActiveReplica(view, forwarder, 5.0),
        mcp_to_active=proxied_mcp,
    )
    gate = ReadinessGate(local, services)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://standby")


async def test_an_api_request_on_a_standby_is_served_by_the_active_replica_unchanged() -> None:
    view = View("a")
    forwarder = Replay({"a": _active_app()})
    async with _standby_client(view, forwarder) as client:
        echoed = await client.post(
            "/api/v1/echo?x=1&y=%C3%A9", content=b'{"k":"v"}', headers={"Authorization": "Bearer t"}
        )
        conflict = await client.get("/api/v1/conflict")
    assert echoed.status_code == 200
    assert echoed.json() == {
        "body": '{"k":"v"}',
        "query": "x=1&y=%C3%A9",
        "auth": "Bearer t",
        "by": "me",
    }
    assert (conflict.status_code, conflict.text) == (409, "taken")
    assert conflict.headers["x-winner"] == "b"
    assert forwarder.sent == ["a", "a"]
    assert view.reads == 1  # the active replica's identity is read once, not per request


async def test_a_reply_that_repeats_a_header_is_relayed_with_every_copy() -> None:
    async with _standby_client(View("a"), Replay({"a": _active_app()})) as client:
        response = await client.post("/api/v1/login")
    assert response.headers.get_list("set-cookie") == [
        "session=s1; Path=/; SameSite=lax",
        "csrf=c1; Path=/; SameSite=lax",
    ]
    assert response.text == "in"


async def test_a_standby_serves_the_web_ui_itself_and_proxies_mcp_to_the_active() -> None:
    forwarder = Replay({"a": _active_app()})
    async with _standby_client(View("a"), forwarder) as client:
        static = await client.get("/static/app.js")
        mcp = await client.post("/mcp/sessions/s1", json={})
        carried = await client.post("/mcp/sessions/s1", json={}, headers={FORWARDED_BY: "x"})
    assert static.text == "served here"
    assert (mcp.status_code, mcp.text) == (202, "proxied /mcp/sessions/s1")
    assert forwarder.sent == []  # not over NATS: a tool call's response may take hours
    # Proxied once already (the sender thought this replica active): refused, not looped.
    assert carried.status_code == 503
    assert carried.json()["error"]["code"] == "standby"
    assert carried.json()["error"]["active"] == {"id": "a", "advertise_url": "http://a:8787"}


async def test_a_request_already_carried_once_is_never_carried_again() -> None:
    forwarder = Replay({"a": _active_app()})
    async with _standby_client(View("a"), forwarder) as client:
        refused = await client.get("/api/v1/conflict", headers={FORWARDED_BY: "other"})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "standby"
    assert forwarder.sent == []


async def test_without_an_active_replica_the_answer_is_a_retryable_standby() -> None:
    forwarder = Replay({})
    async with _standby_client(View(None), forwarder) as client:
        refused = await client.post("/api/v1/echo", content=b"{}")
    error = refused.json()["error"]
    assert refused.status_code == 503
    assert (error["code"], error["retryable"]) == ("standby", True)
    assert "no replica is active yet" in error["message"]
    assert forwarder.sent == []


async def test_a_cached_none_active_is_read_again_before_the_request_is_refused() -> None:
    # The list was read (and trusted for a second) while no replica was active, in the middle
    # of a failover; the request comes once another has taken over.
    view = View(None)
    forwarder = Replay({"b": _active_app()})
    async with _standby_client(view, forwarder) as client:
        refused = await client.post("/api/v1/echo", content=b"during")
        view.active_id = "b"
        response = await client.post("/api/v1/echo", content=b"after")
    assert refused.status_code == 503
    assert response.status_code == 200 and response.json()["body"] == "after"
    assert forwarder.sent == ["b"]


async def test_a_request_nobody_received_goes_once_more_to_a_newly_active_replica() -> None:
    view = View("a")

    def gone(replica_id: str) -> None:
        if replica_id == "a":
            view.active_id = "b"  # "a" died; "b" took over before the list was read again
            raise ForwardFailed("replica a is not listening", delivered=False)

    forwarder = Replay({"b": _active_app()}, fail=gone)
    async with _standby_client(view, forwarder) as client:
        response = await client.post("/api/v1/echo", content=b"again")
    assert response.status_code == 200 and response.json()["body"] == "again"
    assert forwarder.sent == ["a", "b"]


async def test_a_request_that_may_have_been_applied_is_not_sent_again() -> None:
    def lost(replica_id: str) -> None:
        raise ForwardFailed("replica a did not answer within 5 s", delivered=True)

    forwarder = Replay({"a": _active_app()}, fail=lost)
    async with _standby_client(View("a"), forwarder) as client:
        response = await client.post("/api/v1/echo", content=b"{}")
    error = response.json()["error"]
    assert response.status_code == 503
    assert (error["code"], error["retryable"]) == ("replica_unreachable", True)
    assert (
        "may have been applied" in error["message"]
        and "conflict naming the winner" in (error["message"])
    )
    assert forwarder.sent == ["a"]


async def test_the_caller_learns_at_once_when_the_active_replica_dies_holding_its_request() -> None:
    view = View("a")
    holding = asyncio.Event()

    class Dies:
        async def forward(
            self, replica_id: str, request: ForwardedRequest, timeout_s: float
        ) -> ForwardedReply:
            holding.set()
            await asyncio.Event().wait()  # the process died: no reply ever comes
            raise AssertionError("unreachable")

    async with _standby_client(view, Dies()) as client:
        answer = asyncio.ensure_future(client.post("/api/v1/echo", content=b"{}"))
        await holding.wait()
        view.active_id = None  # its row is gone: no longer the active replica
        response = await asyncio.wait_for(answer, 30)  # a ceiling, far below the deadline
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "replica_unreachable"
    assert "stopped being the active replica" in response.json()["error"]["message"]


async def test_an_unreachable_active_replica_is_named_with_the_reason_and_nothing_applied() -> None:
    def unreachable(replica_id: str) -> None:
        raise ForwardFailed("could not send the request: NATS is down", delivered=False)

    forwarder = Replay({"a": _active_app()}, fail=unreachable)
    async with _standby_client(View("a"), forwarder) as client:
        response = await client.post("/api/v1/echo", content=b"{}")
    error = response.json()["error"]
    assert response.status_code == 503
    assert (error["code"], error["retryable"]) == ("standby", True)
    assert "NATS is down" in error["message"] and "nothing was applied" in error["message"]
    assert error["active"] == {"id": "a", "advertise_url": "http://a:8787"}
    assert forwarder.sent == ["a"]  # the list still names "a": not sent twice
