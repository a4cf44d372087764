"""Driving an `McpEndpoint` in-process: a `build` that fails on cue, and `initialize` requests
with the session's secret."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from clarion.mcp.tools import McpEndpoint, build_mcp_server
from clarion.orchestrator.launch import SessionTokens

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


class Builds:
    """`build` for the endpoint: fails with `error` the first `failures` times, then builds the
    real server; counts the calls."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.calls = 0
        self.called = threading.Event()  # set by the first call (on whichever thread)
        self._failures = failures
        self._error = error

    def __call__(self) -> Any:
        self.calls += 1
        self.called.set()
        if self.calls <= self._failures:
            raise self._error
        return build_mcp_server(None)  # type: ignore[arg-type]  # initialize needs no Asker


@contextlib.asynccontextmanager
async def initialize_calls(
    build: Callable[[], Any], endpoint_seen: Callable[[McpEndpoint], None] = lambda _: None
) -> AsyncIterator[Callable[[], Awaitable[httpx.Response]]]:
    """An endpoint built with `build` (handed to `endpoint_seen`), served while open; yields a
    function that sends one MCP `initialize` request with the session's secret."""
    tokens = SessionTokens()
    secret = tokens.issue("s1")
    endpoint = McpEndpoint(build, tokens)
    endpoint_seen(endpoint)
    app = Starlette(
        routes=[Route("/mcp/sessions/{session_id}", endpoint=endpoint, methods=["POST"])]
    )
    async with (
        endpoint.running(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client,
    ):

        async def initialize() -> httpx.Response:
            return await client.post(
                "/mcp/sessions/s1", json=INITIALIZE, headers={**ACCEPT, "X-Clarion-Token": secret}
            )

        yield initialize
