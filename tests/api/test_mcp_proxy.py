"""The proxy for agents' MCP requests that reach another replica than their session's
(api/mcp_proxy.py), in process: the request reaches the owner's address unchanged and marked,
the response streams back as it comes, an agent that hangs up ends the upstream request, and
an unreachable owner is a retryable 503 that says nothing was delivered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, MutableMapping
from datetime import UTC, datetime
from typing import Any

import httpx

from clarion.api.carrying import CARRIED_BY
from clarion.api.mcp_proxy import McpToOwner
from clarion.ports.cluster import ReplicaInfo

OWNER = ReplicaInfo(
    "a", "http://a.internal:8787/", "active", datetime.now(UTC), datetime.now(UTC), 1
)


class Stream(httpx.AsyncByteStream):
    """A response body sent in parts; it may then fail, or hold open until closed."""

    def __init__(self, parts: list[bytes], *, then: str = "end") -> None:
        self.parts = parts
        self.then = then
        self.closed = asyncio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part
        if self.then == "fail":
            raise httpx.ReadError("connection reset by peer")
        if self.then == "hold":
            await self.closed.wait()

    async def aclose(self) -> None:
        self.closed.set()


def _proxy(handler: Any) -> McpToOwner:
    return McpToOwner("me", transport=httpx.MockTransport(handler))


def _scope(method: str = "POST", query: bytes = b"") -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": "/mcp/sessions/s1",
        "query_string": query,
        "headers": [
            (b"host", b"b.internal:8787"),
            (b"x-clarion-token", b"secret"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", b"17"),
        ],
    }


class Agent:
    """The agent's side of one proxied request: sends `body`, hangs up when told."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.sent: list[MutableMapping[str, Any]] = []
        self.hang_up = asyncio.Event()
        self.streaming = asyncio.Event()  # the first part of the response arrived
        self._asked = False

    async def receive(self) -> dict[str, Any]:
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.hang_up.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(message)
        if message.get("body"):
            self.streaming.set()

    @property
    def body_sent(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")


async def test_a_proxied_request_reaches_the_owner_marked_and_its_stream_comes_back() -> None:
    seen: list[httpx.Request] = []

    def owner(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            headers=[("content-type", "text/event-stream"), ("mcp-session-id", "m1")],
            stream=Stream([b"event: message\n", b"data: {}\n\n"]),
        )

    proxy = _proxy(owner)
    agent = Agent(b'{"jsonrpc":"2.0"}')
    await proxy.proxy(_scope(query=b"x=1"), agent.receive, agent.send, OWNER)
    await proxy.aclose()

    (request,) = seen
    assert str(request.url) == "http://a.internal:8787/mcp/sessions/s1?x=1"
    assert request.content == b'{"jsonrpc":"2.0"}'
    assert request.headers["x-clarion-token"] == "secret"  # the owner authenticates the agent
    assert request.headers[CARRIED_BY] == "me"  # served there, never proxied a second time
    assert request.headers["host"] == "a.internal:8787"
    start = agent.sent[0]
    assert (start["type"], start["status"]) == ("http.response.start", 200)
    assert (b"mcp-session-id", b"m1") in start["headers"]
    assert agent.body_sent == b"event: message\ndata: {}\n\n"
    assert agent.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def test_the_owners_refusal_reaches_the_agent_unchanged() -> None:
    def owner(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, stream=Stream([b'{"error": {"code": "unauthenticated"}}']))

    proxy = _proxy(owner)
    agent = Agent(b"{}")
    await proxy.proxy(_scope(), agent.receive, agent.send, OWNER)
    await proxy.aclose()
    assert agent.sent[0]["status"] == 401
    assert json.loads(agent.body_sent) == {"error": {"code": "unauthenticated"}}


async def test_an_agent_that_hangs_up_ends_the_proxied_request() -> None:
    body = Stream([b"event: message\n"], then="hold")  # a tool call still waiting

    def owner(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    proxy = _proxy(owner)
    agent = Agent(b"{}")
    proxying = asyncio.ensure_future(proxy.proxy(_scope(), agent.receive, agent.send, OWNER))
    await asyncio.wait_for(agent.streaming.wait(), 30)
    assert agent.body_sent == b"event: message\n"
    assert not proxying.done()
    agent.hang_up.set()
    await asyncio.wait_for(proxying, 30)
    assert body.closed.is_set()  # the owner sees the disconnect too
    await proxy.aclose()


async def test_an_owner_lost_mid_response_ends_the_stream() -> None:
    def owner(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Stream([b"data: 1\n\n"], then="fail"))

    proxy = _proxy(owner)
    agent = Agent(b"{}")
    await asyncio.wait_for(proxy.proxy(_scope(), agent.receive, agent.send, OWNER), 30)
    await proxy.aclose()
    assert agent.body_sent == b"data: 1\n\n"
    assert agent.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def test_an_unreachable_owner_is_a_retryable_503_naming_it_with_nothing_sent() -> None:
    tried: list[httpx.Request] = []

    def owner(request: httpx.Request) -> httpx.Response:
        tried.append(request)
        raise httpx.ConnectError("connection refused")

    proxy = _proxy(owner)
    agent = Agent(b"{}")
    await asyncio.wait_for(proxy.proxy(_scope(), agent.receive, agent.send, OWNER), 30)
    await proxy.aclose()
    assert len(tried) == 1
    start, *_ = agent.sent
    assert start["status"] == 503
    error = json.loads(agent.body_sent)["error"]
    assert (error["code"], error["retryable"]) == ("replica_unavailable", True)
    assert error["replica"] == {"id": "a", "advertise_url": "http://a.internal:8787/"}
    assert "connection refused" in error["message"] and "nothing was delivered" in error["message"]
