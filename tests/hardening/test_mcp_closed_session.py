"""A notification that reaches an MCP session its client already closed: the SDK has answered
202 by then, so the endpoint notes it in one line instead of a traceback and a second response
("Unexpected ASGI message ... after response already completed")."""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from clarion.mcp.tools import McpEndpoint
from clarion.orchestrator.launch import SessionTokens


class _Inner:
    def __init__(self, *, respond_first: bool) -> None:
        self.respond_first = respond_first

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.respond_first:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        raise anyio.ClosedResourceError


def _endpoint(
    inner: _Inner,
) -> tuple[McpEndpoint, SessionTokens, list[MutableMapping[str, Any]]]:
    tokens = SessionTokens()
    endpoint = McpEndpoint.__new__(McpEndpoint)
    endpoint._inner = inner  # type: ignore[assignment]
    endpoint._tokens = tokens
    return endpoint, tokens, []


def _scope(token: str) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp/sessions/s1",
        "headers": [(b"x-clarion-token", token.encode())],
        "path_params": {"session_id": "s1"},
        "query_string": b"",
    }


async def test_a_message_for_a_closed_session_after_the_202_is_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    endpoint, tokens, sent = _endpoint(_Inner(respond_first=True))
    token = tokens.issue("s1")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    with caplog.at_level(logging.INFO, logger="clarion.mcp.tools"):
        await endpoint(_scope(token), receive, send)

    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 202
    assert any("already closed" in r.getMessage() for r in caplog.records)


async def test_a_closed_session_before_any_response_still_raises() -> None:
    endpoint, tokens, _ = _endpoint(_Inner(respond_first=False))
    token = tokens.issue("s1")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        return None

    with pytest.raises(anyio.ClosedResourceError):
        await endpoint(_scope(token), receive, send)
