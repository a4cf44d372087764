"""What the built-in agent's scenarios see of one running prompt (`PromptHost`, their
`ScenarioHost`), and the per-session state it acts on: the session's MCP endpoint, its
connection (opened on the first question, its client module loaded in the background) and
its recent prompts.

Imported by `clarion.agents.builtin` only.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

import acp
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from clarion.agents.scenarios import ToolOutcome

if TYPE_CHECKING:
    from clarion.agents.builtin import BuiltinAgent
    from clarion.agents.mcp_call import McpConnection

ASK_TOOL = "ask_user_question"

# The MCP client stack takes about a second to import, half of this process's start-up CPU.
# It is loaded in a background thread when a prompt names a scenario that asks, so the first
# question barely waits for it and a session that never asks does not pay for it.
MCP_CALL_MODULE = "clarion.agents.mcp_call"


@functools.cache  # once per process
def load_mcp_client_in_background() -> None:
    threading.Thread(target=importlib.import_module, args=(MCP_CALL_MODULE,), daemon=True).start()


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    headers: dict[str, str]


@dataclass(slots=True)
class AgentSession:
    endpoint: Endpoint | None
    running: asyncio.Task[Any] | None = None
    mcp: McpConnection | None = None  # opened on the session's first question
    prompts: list[str] = field(default_factory=list)  # newest last, bounded
    cwd: str = ""  # ACP's working directory of the session ("" : the process's own)


class PromptHost:
    """What scenarios see of one running prompt."""

    def __init__(self, agent: BuiltinAgent, session_id: str, session: AgentSession):
        self._agent = agent
        self._session_id = session_id
        self._session = session
        self._endpoint = session.endpoint

    async def say(self, text: str) -> None:
        await self._agent.send(self._session_id, acp.update_agent_message_text(text))

    async def ask(
        self, arguments: dict[str, Any], *, read_timeout: float | None, report_end: bool
    ) -> ToolOutcome:
        if self._endpoint is None:
            return ToolOutcome(failure="this session was given no HTTP MCP server")
        call_id = f"ask-{next(self._agent.call_ids)}"
        await self._agent.send(
            self._session_id,
            acp.start_tool_call(call_id, ASK_TOOL, kind="other", status="in_progress"),
        )
        # Waits for the background import (or makes it, for a prompt that did not name an
        # asking scenario) without blocking the event loop.
        mcp_call = await asyncio.to_thread(importlib.import_module, MCP_CALL_MODULE)
        if self._session.mcp is None:
            self._session.mcp = mcp_call.McpConnection(self._endpoint.url, self._endpoint.headers)
        outcome: ToolOutcome = await self._session.mcp.call_tool(
            ASK_TOOL, arguments, read_timeout=read_timeout
        )
        if not (outcome.is_error or outcome.timed_out or outcome.failure):
            self._agent.journal("tool_result", self._session_id, outcome.text)
        if report_end:
            ok = not (outcome.is_error or outcome.timed_out or outcome.failure)
            status: Literal["completed", "failed"] = "completed" if ok else "failed"
            await self._agent.send(self._session_id, acp.update_tool_call(call_id, status=status))
        return outcome

    def working_directory(self) -> str:
        return self._session.cwd or os.getcwd()

    def previous_prompt(self) -> str | None:
        prompts = self._session.prompts
        return prompts[-2] if len(prompts) >= 2 else None

    async def request_permission(
        self,
        *,
        title: str,
        kind: str,
        raw_input: dict[str, Any],
        options: list[tuple[str, str, str]],
    ) -> str | None:
        call_id = f"perm-{next(self._agent.call_ids)}"
        await self._agent.send(
            self._session_id,
            acp.start_tool_call(
                call_id, title, kind=cast(Any, kind), status="pending", raw_input=raw_input
            ),
        )
        assert self._agent.conn is not None
        response = await self._agent.conn.request_permission(
            session_id=self._session_id,
            tool_call=ToolCallUpdate(
                tool_call_id=call_id, title=title, kind=cast(Any, kind), raw_input=raw_input
            ),
            options=[
                PermissionOption(option_id=o, name=n, kind=cast(Any, k)) for o, n, k in options
            ],
        )
        outcome = response.outcome
        chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else None
        status: Literal["completed", "failed"] = "completed" if chosen else "failed"
        await self._agent.send(self._session_id, acp.update_tool_call(call_id, status=status))
        return chosen

    def exit(self, code: int, message: str) -> None:
        os.write(2, message.encode() + b"\n")
        os._exit(code)

    def write_stderr(self, nbytes: int) -> None:
        line = b"x" * 99 + b"\n"
        full, part = divmod(nbytes, len(line))
        # Blocking writes on purpose: if nobody drains our stderr, this is where we hang.
        for _ in range(full):
            os.write(2, line)
        if part:
            os.write(2, line[:part])
