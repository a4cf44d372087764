"""The `ask_user_question` tool on the MCP SDK's server: its arguments' models and the server
that maps the Asker's outcomes to MCP results.

Imported by `clarion.mcp.tools.build_mcp_server` only: the SDK (its protocol types for two
protocol versions, hundreds of pydantic models) is about a third of a server's start-up CPU,
which a server whose agents never ask need not pay.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import BaseModel, Field, ValidationError

from clarion.clarification.asker import Asker
from clarion.domain.errors import InvalidInput, NotFound, QuestionDetached
from clarion.domain.questions import MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS
from clarion.mcp.errors import from_invalid_input, from_validation
from clarion.mcp.tools import DISCONNECTED, TOOL_DESCRIPTION


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


def build_server(asker: Asker) -> ClarionMcpServer:
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
