"""What the MCP endpoint does when loading the SDK or starting its session manager fails: the
request that ran into it fails and says why, and the next request tries again from the start
instead of inheriting the failure, so one bad moment does not leave a server's agents without
their tool until it restarts."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
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
        self._failures = failures
        self._error = error

    def __call__(self) -> Any:
        self.calls += 1
        if self.calls <= self._failures:
            raise self._error
        return build_mcp_server(None)  # type: ignore[arg-type]  # initialize needs no Asker


@contextlib.asynccontextmanager
async def _initialize_calls(
    build: Callable[[], Any],
) -> AsyncIterator[Callable[[], Awaitable[httpx.Response]]]:
    """An endpoint built with `build`, served while open; yields a function that sends one MCP
    `initialize` request with the session's secret."""
    tokens = SessionTokens()
    secret = tokens.issue("s1")
    endpoint = McpEndpoint(build, tokens)
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


async def test_a_failed_sdk_load_fails_its_request_and_the_next_request_loads_again() -> None:
    builds = Builds(failures=1, error=ImportError("the SDK could not be imported"))
    async with _initialize_calls(builds) as initialize:
        with pytest.raises(ImportError, match="could not be imported"):
            await initialize()
        answered = await initialize()
    assert answered.status_code == 200, answered.text
    assert builds.calls == 2


async def test_a_session_manager_that_fails_to_start_fails_its_request_and_the_next_starts_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_run = StreamableHTTPSessionManager.run
    starts: list[str] = []

    @contextlib.asynccontextmanager
    async def run_failing_once(self: StreamableHTTPSessionManager) -> AsyncIterator[None]:
        starts.append("start")
        if len(starts) == 1:
            raise RuntimeError("the session manager could not start")
        async with real_run(self):
            yield

    monkeypatch.setattr(StreamableHTTPSessionManager, "run", run_failing_once)
    builds = Builds(failures=0, error=AssertionError("unused"))
    async with _initialize_calls(builds) as initialize:
        with pytest.raises(RuntimeError, match="could not start"):
            await initialize()
        answered = await initialize()
    assert answered.status_code == 200, answered.text
    assert (builds.calls, len(starts)) == (2, 2)
