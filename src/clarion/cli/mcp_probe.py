"""The MCP endpoint `clarion agents check` serves on a loopback port while it checks an agent.

It mounts Clarion's real `ask_user_question` tool (same name, description and input schema as
the server's, from `clarion.mcp.tools`) but behind a probe: no person is asked, a call gets a
fixed reply at once. It records which JSON-RPC methods reached it, which is the evidence the
check reports: an agent that never connected ignored the MCP server it was given, one that
sent `tools/list` has seen the tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.clarification.asker import Asker
from clarion.mcp.tools import build_mcp_server

PROBE_REPLY = (
    "This is `clarion agents check`, not a person: the question reached Clarion. "
    "No answer will come; end your turn."
)
_STOP_S = 2.0


@dataclass(slots=True)
class Sightings:
    """What the agent did to the probe endpoint."""

    methods: list[str] = field(default_factory=list)
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    listed: asyncio.Event = field(default_factory=asyncio.Event)

    def note(self, method: str) -> None:
        self.methods.append(method)
        if method == "tools/list":
            self.listed.set()


class _ProbeAsker:
    """Stands in for the Asker: the tool answers at once and nobody is asked."""

    def __init__(self, sightings: Sightings) -> None:
        self._sightings = sightings

    async def ask(
        self,
        session_id: str,
        arguments: dict[str, Any],
        progress: Callable[[str], Awaitable[None]],
        dropped: asyncio.Event | None = None,
    ) -> str:
        return PROBE_REPLY


class _Recorder:
    """ASGI wrapper noting each JSON-RPC method posted, then replaying the body to `app`."""

    def __init__(self, app: ASGIApp, sightings: Sightings) -> None:
        self._app = app
        self._sightings = sightings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        self._sightings.connected.set()
        held: list[Message] = []
        body = b""
        if scope["method"] == "POST":
            while True:
                message = await receive()
                held.append(message)
                body += message.get("body", b"")
                if message["type"] != "http.request" or not message.get("more_body"):
                    break
        self._record(body)

        async def replay() -> Message:
            return held.pop(0) if held else await receive()

        await self._app(scope, replay, send)

    def _record(self, body: bytes) -> None:
        with contextlib.suppress(ValueError):
            frames = json.loads(body) if body else []
            for frame in frames if isinstance(frames, list) else [frames]:
                if isinstance(frame, dict) and isinstance(frame.get("method"), str):
                    self._sightings.note(frame["method"])


@contextlib.asynccontextmanager
async def serve_probe(session_id: str) -> AsyncIterator[tuple[str, Sightings]]:
    """Serve the probe on 127.0.0.1 (a free port) for the `with` block: yields its URL."""
    sightings = Sightings()
    # The probe is not an Asker, but the tool only calls `ask` on it.
    server = build_mcp_server(cast(Asker, _ProbeAsker(sightings)))
    app = server.streamable_http_app(
        streamable_http_path="/mcp/{session_id}",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    config = uvicorn.Config(
        _Recorder(app, sightings),
        host="127.0.0.1",
        port=0,
        log_level="critical",
        lifespan="on",
        timeout_graceful_shutdown=int(_STOP_S),
    )
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve(), name="agents-check-mcp")
    try:
        while not web.started:
            if task.done():
                await task
                raise RuntimeError("the probe MCP server did not start")
            await asyncio.sleep(0.02)
        port = web.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp/{session_id}", sightings
    finally:
        web.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, _STOP_S * 2)
