"""The agent-facing MCP server: one tool, `ask_user_question`, per-session endpoints.

Mounted at /mcp/sessions/{session_id} (streamable HTTP). The per-session secret travels in the
`X-Clarion-Token` header; a request without the right one, or for an unknown session, gets 401
before the MCP layer sees it. The tool is thin (`clarion.mcp.ask_tool`): it hands the arguments
to the Asker and maps its outcomes to MCP results.

The MCP SDK is loaded in a worker thread, not at start: when the server launches its first agent
that discovers its tools as it starts (`warm`), or with the first request that passes the
secret check if that comes first. Most of a server's start-up CPU is imports, and the SDK is a
third of them. Done on the event loop, that
import would hold every other task for up to a second under load, long enough for a cluster
replica to miss its heartbeat and fence itself. Loaded while the agent starts, it is ready for
the agent's first request: some agents give tool discovery a fixed few seconds (Qwen Code: 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from clarion.clarification.asker import Asker
from clarion.domain.error_bodies import error_body, wire_error
from clarion.domain.errors import Unauthenticated
from clarion.orchestrator.launch import SessionTokens

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

    from clarion.mcp.ask_tool import ClarionMcpServer

log = logging.getLogger(__name__)

TOKEN_HEADER = "x-clarion-token"
# Scope key of the event set when the HTTP connection carrying a call goes away.
DISCONNECTED = "clarion.disconnected"
TOOL_DESCRIPTION = (
    "Ask the person running this task one to four multiple-choice questions and wait for the "
    "answer. Each question has 2-6 options; the person may also type a custom answer or skip. "
    "If the call ends without an answer (Clarion's own wait limit, your client's timeout or "
    "cancellation, a dropped connection, a Clarion restart), the question stays open: end your "
    "turn and do not ask it again; the answer will arrive later as a new prompt. "
    "A question may expire under the person's waiting policy (`expires_in` may shorten it, "
    "never lengthen it): then it is skipped (the result is a rejection whose reason begins "
    "'No answer within'), or, when the policy says so, each question's option marked "
    "`default: true` is chosen for you; the tool's progress messages and its open-question "
    "error say when."
)


def build_mcp_server(asker: Asker) -> ClarionMcpServer:
    """The MCP server with the `ask_user_question` tool (imports the SDK on the calling thread)."""
    from clarion.mcp.ask_tool import build_server

    return build_server(asker)


def _serve_over_http(server: MCPServer[Any]) -> StreamableHTTPASGIApp:
    """The streamable-HTTP app of `server`, mounted at an exact path (creates its session
    manager)."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    server.streamable_http_app(
        streamable_http_path="/",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return StreamableHTTPASGIApp(server.session_manager)


class McpEndpoint:
    """ASGI endpoint: checks the session secret, then hands the request to the MCP app, which
    it builds with the first request that passes the check (`build` makes the server).

    The SDK's session manager runs inside `running()` (the served app's lifespan), from the
    first request to the end; a test that drives the endpoint without a lifespan runs it
    itself, through `server`."""

    def __init__(self, build: Callable[[], MCPServer[Any]], tokens: SessionTokens) -> None:
        self._build = build
        self._server: MCPServer[Any] | None = None
        self._inner: StreamableHTTPASGIApp | None = None
        self._tokens = tokens
        self._loading: asyncio.Future[StreamableHTTPASGIApp] | None = None
        self._live = False
        self._stop = asyncio.Event()
        self._manager: asyncio.Task[None] | None = None

    @property
    def server(self) -> MCPServer[Any]:
        """The MCP server, built now if no request has built it yet."""
        if self._server is None:
            self._server = self._build()
            self._inner = _serve_over_http(self._server)
        return self._server

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While open, the first request starts the session manager; leaving stops it (and
        ends every MCP request still open), as the served app's lifespan did before."""
        self._live = True
        try:
            yield
        finally:
            self._live = False
            self._stop.set()
            if self._manager is not None:
                await self._manager

    def warm(self) -> None:
        """Start loading the SDK in the background, if nothing has yet (called as an agent is
        launched, so the load runs while the agent starts). Only while serving: the load starts
        the session manager, which lives in `running()`. A failed load is logged; the next
        request tries again."""
        if not self._live or self._inner is not None or self._loading is not None:
            return
        loading = self._loading = asyncio.ensure_future(self._load())
        loading.add_done_callback(self._forget_failed)

    def _forget_failed(self, loading: asyncio.Future[StreamableHTTPASGIApp]) -> None:
        if loading.cancelled() or loading.exception() is None:
            return
        log.warning(
            "loading the MCP server failed; the next request tries again",
            exc_info=loading.exception(),
        )
        if self._loading is loading:
            self._loading = None

    async def _loaded(self) -> StreamableHTTPASGIApp:
        # One load for every request that arrives meanwhile; a request that goes away while
        # it runs does not stop it (shield), and a failed load is tried again by the next.
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        loading = self._loading
        try:
            return await asyncio.shield(loading)
        except Exception:
            if self._loading is loading:
                self._loading = None
            raise

    async def _load(self) -> StreamableHTTPASGIApp:
        # The SDK's import and the tool's argument model off the loop; the HTTP app (anyio
        # primitives) on it.
        server = await asyncio.to_thread(self._build)
        inner = _serve_over_http(server)
        self._server = server
        if self._live:
            started = asyncio.get_running_loop().create_future()
            self._manager = asyncio.create_task(self._run_manager(server, started))
            await started
        self._inner = inner
        log.info("MCP server loaded")
        return inner

    async def _run_manager(self, server: MCPServer[Any], started: asyncio.Future[None]) -> None:
        # One task enters and leaves the manager: anyio's task groups may not cross tasks.
        try:
            async with server.session_manager.run():
                started.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            if started.done():
                raise
            started.set_exception(exc)  # the request that started it fails, and says why

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        session_id = str(request.path_params.get("session_id", ""))
        if not self._tokens.verify(session_id, request.headers.get(TOKEN_HEADER)):
            log.warning(
                "MCP request refused: bad or missing session secret",
                extra={"session_id": session_id},
            )
            status, body = error_body(Unauthenticated("missing or wrong session token"))
            await JSONResponse(body, status_code=status)(scope, receive, send)
            return
        if scope["method"] == "GET":
            await _NO_STANDALONE_STREAM(scope, receive, send)
            return
        inner = self._inner if self._inner is not None else await self._loaded()
        sent = _ResponseTracker(send)
        try:
            await inner(scope, _watching_disconnect(scope, receive), sent)
        except anyio.ClosedResourceError:
            # The SDK answers a notification (e.g. `notifications/cancelled` from a client that
            # gave up) with 202 first and only then hands it to the session, which the client
            # may have closed meanwhile. Nothing is lost (the call it cancels already ended),
            # and a second response cannot be sent after the first: note it and stop.
            if not sent.started:
                raise
            log.info(
                "MCP message for a session the client already closed; dropped",
                extra={"session_id": session_id},
            )


# A GET would open the standalone SSE stream, which carries what a server sends outside any
# request. Clarion sends nothing there (a call's progress and result travel on the call's own
# stream), yet every agent held one open: a second held request per session, with its SSE
# pings every 15 s. With 1,000 sessions waiting, refusing it took the server from 405 to
# 340 MiB. The MCP transport lets a server refuse it with 405; clients then go on without it.
_NO_STANDALONE_STREAM = JSONResponse(
    wire_error(
        "method_not_allowed",
        "this endpoint offers no standalone stream; POST requests, DELETE the session",
        False,
    ),
    status_code=405,
    headers={"Allow": "POST, DELETE"},
)


class _ResponseTracker:
    """`send`, remembering whether a response has started, and dropping a second response once
    the first has completed: the SDK answers a failed notification with a 500 after its 202,
    which the server would refuse with a traceback ("Unexpected ASGI message")."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.completed = False

    async def __call__(self, message: Message) -> None:
        if self.completed:
            log.info("MCP response after the first one completed; dropped")
            return
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.completed = True
        await self._send(message)


def _watching_disconnect(scope: Scope, receive: Receive) -> Receive:
    """`receive`, noting in the scope when the client disconnects. A dropped POST stream can
    never carry the tool's result back (no event store, so no resumption), so the Asker detaches
    the question then rather than confirm an answer to a call nobody holds."""
    gone = asyncio.Event()
    scope[DISCONNECTED] = gone

    async def watched() -> Message:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
        return message

    return watched
