"""Helpers for the agent-layer tests: a recording sink and a tiny MCP server exposing
`ask_user_question` behind the `X-Clarion-Token` header. Imported by conftest and tests."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.ports import AgentExited, AgentLaunch, AgentOutput, PermissionAsk, PromptFinished

WAIT_S = 60.0  # a ceiling for waits, never a delay: load makes tests slower, not red


class RecordingSink:
    """Records every item in delivery order and lets a test wait for one, bounded."""

    def __init__(self) -> None:
        self.items: list[AgentOutput | PromptFinished] = []
        self._changed = asyncio.Event()
        self.fail_on: Callable[[AgentOutput | PromptFinished], bool] | None = None
        self.exits: list[AgentExited] = []
        self.asks: list[PermissionAsk] = []
        self.permission_answer: str | None = None

    async def on_output(self, output: AgentOutput) -> None:
        self._record(output)

    async def on_prompt_finished(self, finished: PromptFinished) -> None:
        self._record(finished)

    async def on_agent_exited(self, exited: AgentExited) -> None:
        self.exits.append(exited)
        self._changed.set()

    async def on_permission(self, ask: PermissionAsk) -> str | None:
        self.asks.append(ask)
        self._changed.set()
        return self.permission_answer

    def _record(self, item: AgentOutput | PromptFinished) -> None:
        self.items.append(item)
        self._changed.set()
        if self.fail_on is not None and self.fail_on(item):
            raise RuntimeError("sink failure injected by the test")

    @property
    def outputs(self) -> list[AgentOutput]:
        return [i for i in self.items if isinstance(i, AgentOutput)]

    def messages(self, generation: int | None = None) -> list[str]:
        return [
            o.text
            for o in self.outputs
            if o.kind == "message" and (generation is None or o.generation == generation)
        ]

    async def wait_for(self, predicate: Callable[[], bool], within: float = WAIT_S) -> None:
        async with asyncio.timeout(within):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    async def finished(self, generation: int, within: float = WAIT_S) -> PromptFinished:
        def match() -> PromptFinished | None:
            for item in self.items:
                if isinstance(item, PromptFinished) and item.generation == generation:
                    return item
            return None

        await self.wait_for(lambda: match() is not None, within)
        found = match()
        assert found is not None
        return found


def launch(
    session_id: str = "s1",
    url: str = "http://127.0.0.1:9/mcp/s1",
    token: str = "t",
    profile: str = "builtin",
) -> AgentLaunch:
    return AgentLaunch(session_id=session_id, profile=profile, mcp_url=url, mcp_token=token)


# --------------------------------------------------------------------------- MCP test server


@dataclass
class AskServer:
    """What the test MCP server saw, and how it answers. `mode`: answer | error | hang."""

    token: str
    mode: str = "answer"
    base_url: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    unauthorized: int = 0
    mcp_sessions: set[str] = field(default_factory=set)  # Mcp-Session-Id values seen
    called: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    answer: asyncio.Future[str] | None = None

    def url(self, session_id: str) -> str:
        return f"{self.base_url}/mcp/{session_id}"

    def reply(self, text: str) -> None:
        assert self.answer is not None
        self.answer.set_result(text)


class _TokenGate:
    def __init__(self, app: ASGIApp, state: AskServer) -> None:
        self._app = app
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        if headers.get(b"x-clarion-token", b"").decode() != self._state.token:
            self._state.unauthorized += 1
            await JSONResponse({"error": "unauthenticated"}, status_code=401)(scope, receive, send)
            return
        if session := headers.get(b"mcp-session-id"):
            self._state.mcp_sessions.add(session.decode())
        await self._app(scope, receive, send)


def _build_app(state: AskServer) -> Starlette:
    mcp = MCPServer("clarion-test", log_level="WARNING")

    @mcp.tool()
    async def ask_user_question(
        questions: list[dict[str, Any]], ctx: Context, context: str | None = None
    ) -> str:
        state.calls.append({"questions": questions, "context": context})
        state.answer = asyncio.get_running_loop().create_future()
        state.called.set()
        try:
            if state.mode == "error":
                raise ToolError("The question stays open; end your turn.")
            if state.mode == "hang":
                await asyncio.Event().wait()
            return await state.answer
        except asyncio.CancelledError:
            state.cancelled.set()
            raise

    mcp.streamable_http_app(
        streamable_http_path="/",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    endpoint = _TokenGate(StreamableHTTPASGIApp(mcp.session_manager), state)
    return Starlette(routes=[Route("/mcp/{sid}", endpoint=endpoint)], lifespan=lifespan)


@asynccontextmanager
async def serve_ask_server() -> AsyncIterator[AskServer]:
    state = AskServer(token=secrets.token_hex(8))
    config = uvicorn.Config(
        _build_app(state),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(WAIT_S):
        while not server.started:
            assert not task.done(), "uvicorn failed to start"
            await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    state.base_url = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
