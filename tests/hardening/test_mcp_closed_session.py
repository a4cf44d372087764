"""A notification that reaches an MCP session its client already closed: the SDK has answered
202 by then, so the endpoint drops the SDK's second response ("Unexpected ASGI message ... after
response already completed") and the log keeps one line instead of the SDK's traceback."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from clarion.cli.logs import ClosedMcpSessions, KeyValueFormatter
from clarion.mcp.tools import McpEndpoint
from clarion.orchestrator.launch import SessionTokens


class _Inner:
    """What the SDK does with a notification for a closed session: 202, then (when the session's
    stream is closed) an error response on top, then the closed stream raised."""

    def __init__(self, *, respond_first: bool, error_after: bool = False) -> None:
        self.respond_first = respond_first
        self.error_after = error_after

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.respond_first:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        if self.error_after:
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})
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


async def test_a_second_response_after_the_202_is_dropped_not_sent() -> None:
    endpoint, tokens, sent = _endpoint(_Inner(respond_first=True, error_after=True))
    token = tokens.issue("s1")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if any(m["type"] == "http.response.body" for m in sent):
            raise RuntimeError("Unexpected ASGI message sent, after response already completed.")
        sent.append(message)

    await endpoint(_scope(token), receive, send)

    assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [202]


def _sdk_error_record(error: Exception) -> logging.LogRecord:
    """The record the SDK logs (`logger.exception`) when handling a POST fails with `error`."""
    try:
        raise error
    except Exception:
        exc_info = sys.exc_info()
    return logging.LogRecord(
        "mcp.server.streamable_http",
        logging.ERROR,
        __file__,
        1,
        "Error handling POST request",
        (),
        exc_info,
    )


def test_the_sdks_closed_stream_error_is_logged_as_one_line_without_a_traceback() -> None:
    record = _sdk_error_record(anyio.ClosedResourceError())
    assert ClosedMcpSessions().filter(record)
    line = KeyValueFormatter().format(record)
    assert "Traceback" not in line
    assert record.levelname == "INFO" and "already closed" in line


def test_other_errors_keep_their_traceback() -> None:
    record = _sdk_error_record(ValueError("boom"))
    assert ClosedMcpSessions().filter(record)
    assert "Traceback" in KeyValueFormatter().format(record)
    assert record.levelname == "ERROR"
