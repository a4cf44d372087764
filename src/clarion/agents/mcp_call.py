"""One MCP tool call from inside the built-in agent, over streamable HTTP.

Imported only by `clarion.agents.builtin`. Opens a fresh MCP client per call (legacy handshake,
as today's agents do), sends the session's headers (the `X-Clarion-Token`), and asks for
progress so the server's keep-alive notifications hold the SSE stream open. Every outcome,
including our own client giving up, comes back as a `ToolOutcome`; only cancellation of the
calling task propagates, which makes the MCP client cancel the call on the server.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

# Imported up front: the MCP client otherwise imports it lazily on the first tool result to check
# the output schema, which costs ~100 ms on the first answered question of a process.
import jsonschema  # type: ignore[import-untyped]  # noqa: F401
from httpx2 import AsyncClient, Timeout
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import REQUEST_TIMEOUT

from clarion.agents.scenarios import ToolOutcome

logger = logging.getLogger(__name__)

# The SSE read timeout is kept alive by progress notifications and the server's pings; it only
# has to outlast the gap between two of them.
HTTP_READ_TIMEOUT_S = 300.0
HTTP_CONNECT_TIMEOUT_S = 30.0


async def _on_progress(progress: float, total: float | None, message: str | None) -> None:
    logger.debug("tool progress %s/%s %s", progress, total, message or "")


def _result_text(content: list[Any]) -> str:
    return "\n".join(str(getattr(block, "text", "")) for block in content if block.type == "text")


async def call_tool(
    url: str,
    headers: Mapping[str, str],
    name: str,
    arguments: dict[str, Any],
    *,
    read_timeout: float | None = None,
) -> ToolOutcome:
    """Call `name` on the MCP server at `url` (given in `session/new`, with its `headers`) and wait
    for the result; `read_timeout` bounds that wait."""
    timeout = Timeout(HTTP_CONNECT_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S)
    try:
        async with (
            AsyncClient(headers=dict(headers), timeout=timeout) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as mc,
        ):
            outcome = await _call(mc, name, arguments, read_timeout)
    except Exception as exc:  # connection refused, handshake rejected (401), ...
        logger.warning("MCP session to %s failed: %r", url, exc)
        return ToolOutcome(failure=f"{type(exc).__name__}: {exc}")
    return outcome


async def _call(
    mc: Client, name: str, arguments: dict[str, Any], read_timeout: float | None
) -> ToolOutcome:
    # Errors are turned into outcomes here, inside the client's task groups, so they never
    # come back wrapped in exception groups.
    try:
        result = await mc.call_tool(
            name, arguments, read_timeout_seconds=read_timeout, progress_callback=_on_progress
        )
    except MCPError as exc:
        if exc.code == REQUEST_TIMEOUT:
            logger.info("tool %s: gave up after %ss", name, read_timeout)
            return ToolOutcome(timed_out=True)
        logger.warning("tool %s failed: %s", name, exc.message)
        return ToolOutcome(failure=exc.message)
    return ToolOutcome(text=_result_text(list(result.content)), is_error=bool(result.is_error))
