"""The agent-facing MCP server: one tool, `ask_user_question`, per-session endpoints.

Mounted at /mcp/sessions/{session_id} (streamable HTTP). The per-session secret travels in the
`X-Clarion-Token` header; a request without the right one, or for an unknown session, gets 401
before the MCP layer sees it. The tool is thin: it hands the arguments to the Asker and maps
its outcomes to MCP results.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from clarion.api.errors import error_response
from clarion.clarification.asker import Asker
from clarion.domain.errors import InvalidInput, NotFound, QuestionDetached, Unauthenticated
from clarion.domain.questions import MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS
from clarion.mcp.errors import from_invalid_input, from_validation
from clarion.orchestrator.launch import SessionTokens

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


class OptionIn(BaseModel):
    label: str = Field(min_length=1, description="Short option label")
    description: str | None = Field(default=None, description="What choosing it means")
    option_id: str | None = Field(default=None, description="Stable id; default q1_opt1, ...")
    default: bool | None = Field(
        default=None,
        description="The option chosen if the question expires unanswered (at most one)",
    )


class QuestionIn(BaseModel):
    id: str | None = Field(default=None, description="Stable id; default q1, q2, ...")
    title: str | None = Field(default=None, description="A few words")
    prompt: str = Field(min_length=1, description="The question itself")
    options: list[OptionIn] = Field(
        min_length=MIN_OPTIONS, max_length=MAX_OPTIONS, description="2 to 6 options"
    )


class ClarionMcpServer(MCPServer[Any]):
    """The SDK's server with tool errors rewritten to one clean line (see mcp/errors.py)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a crash: the SDK logs it and tells the client nothing of it
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(from_validation(cause)) from None
            if isinstance(cause, ToolError):  # ours, wrapped by the SDK with its prefix
                raise ToolError(str(cause)) from None
            raise


def build_mcp_server(asker: Asker) -> ClarionMcpServer:
    server = ClarionMcpServer(name="clarion", log_level="WARNING")

    # No output schema: agents hand a tool's structured content to their model in place of its
    # text, and a `{result: string}` schema would show the answer as JSON inside a string.
    @server.tool(name="ask_user_question", description=TOOL_DESCRIPTION, structured_output=False)
    async def ask_user_question(
        questions: Annotated[
            list[QuestionIn],
            Field(
                min_length=MIN_QUESTIONS, max_length=MAX_QUESTIONS, description="1 to 4 questions"
            ),
        ],
        ctx: Context,
        context: Annotated[str | None, Field(description="Background shown once")] = None,
        context_paragraphs: list[str] | None = None,
        expires_in: Annotated[
            str | None,
            Field(description="Expire sooner than the policy says: 30s, 10m, 8h, 2d"),
        ] = None,
    ) -> str:
        request = ctx.request_context.request
        session_id = request.path_params["session_id"] if request is not None else ""
        dropped = request.scope.get(DISCONNECTED) if request is not None else None
        arguments: dict[str, Any] = {
            "questions": [q.model_dump(exclude_none=True) for q in questions],
        }
        if context is not None:
            arguments["context"] = context
        if context_paragraphs is not None:
            arguments["context_paragraphs"] = context_paragraphs
        if expires_in is not None:
            arguments["expires_in"] = expires_in

        async def progress(message: str) -> None:
            await ctx.report_progress(0, None, message)

        try:
            return await asker.ask(session_id, arguments, progress, dropped)
        except InvalidInput as exc:
            raise ToolError(from_invalid_input(exc)) from exc
        except QuestionDetached as exc:
            raise ToolError(exc.message) from exc
        except NotFound as exc:
            raise ToolError(exc.message) from exc

    return server


class McpEndpoint:
    """ASGI endpoint: checks the session secret, then hands the request to the MCP app."""

    def __init__(self, server: MCPServer[Any], tokens: SessionTokens) -> None:
        server.streamable_http_app(
            streamable_http_path="/",
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.server = server
        self._inner = StreamableHTTPASGIApp(server.session_manager)
        self._tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        session_id = str(request.path_params.get("session_id", ""))
        if not self._tokens.verify(session_id, request.headers.get(TOKEN_HEADER)):
            log.warning(
                "MCP request refused: bad or missing session secret",
                extra={"session_id": session_id},
            )
            refusal = error_response(Unauthenticated("missing or wrong session token"))
            await refusal(scope, receive, send)
            return
        sent = _ResponseTracker(send)
        try:
            await self._inner(scope, _watching_disconnect(scope, receive), sent)
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
