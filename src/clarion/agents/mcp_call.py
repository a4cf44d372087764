"""The built-in agent's MCP client: tool calls over streamable HTTP on one kept session.

Imported only by `clarion.agents.builtin`. One `McpConnection` per ACP session, opened on the
first call (legacy handshake, as today's agents do) with the session's headers (the
`X-Clarion-Token`) and kept for the calls after it, as real agents keep their MCP servers
connected. Calls ask for progress so the server's keep-alive notifications hold the SSE stream
open. Every outcome, including our own client giving up, comes back as a `ToolOutcome`; only
cancellation of the calling task propagates. A call that was cancelled, timed out or failed
closes the connection (the server then sees the call dropped and detaches the question, as
with any disconnecting agent); the next call opens a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
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


class McpConnection:
    """One MCP client session to the server at `url` (given in `session/new`, with `headers`).

    The client's task groups must be entered and left by one task, so a dedicated owner task
    holds the session open; calls from any task go through it."""

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        self._url = url
        self._headers = dict(headers)
        self._client: asyncio.Future[Client] | None = None
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, read_timeout: float | None = None
    ) -> ToolOutcome:
        """Call `name` and wait for the result; `read_timeout` bounds that wait."""
        try:
            client = await self._open()
        except Exception as exc:  # connection refused, handshake rejected (401), ...
            logger.warning("MCP session to %s failed: %r", self._url, exc)
            await self.close()
            return ToolOutcome(failure=f"{type(exc).__name__}: {exc}")
        try:
            outcome = await _call(client, name, arguments, read_timeout)
        except BaseException:
            await asyncio.shield(self.close())
            raise
        if outcome.timed_out or outcome.failure is not None:
            await self.close()
        return outcome

    async def _open(self) -> Client:
        if self._client is None:
            self._client = asyncio.get_running_loop().create_future()
            self._closing = asyncio.Event()
            self._owner = asyncio.create_task(self._own(self._client, self._closing))
        return await asyncio.shield(self._client)

    async def _own(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        timeout = Timeout(HTTP_CONNECT_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S)
        try:
            async with (
                AsyncClient(headers=self._headers, timeout=timeout) as http,
                Client(streamable_http_client(self._url, http_client=http), mode="legacy") as mc,
            ):
                ready.set_result(mc)
                await closing.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                logger.info("MCP session to %s ended: %r", self._url, exc)

    async def close(self) -> None:
        """End the session (the server drops whatever call is still open on it)."""
        owner, self._owner, self._client = self._owner, None, None
        self._closing.set()
        if owner is not None:
            with contextlib.suppress(Exception):
                await owner


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
