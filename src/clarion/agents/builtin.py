"""Clarion's built-in scripted ACP agent: `python -m clarion.agents.builtin`.

A real ACP program over stdio, started by the runtime like any other agent and used by the
demo and the tests. What each prompt does lives in `clarion.agents.scenarios`; this module is
the ACP side (sessions, prompt, cancel) and the host the scenarios talk through. Nothing in
Clarion imports it. Stdout carries ACP frames only, so everything else goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
import logging
import os
import sys
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import acp
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AudioContentBlock,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    HttpHeader,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ResourceContentBlock,
    SseMcpServer,
    TextContentBlock,
    ToolCallUpdate,
)

from clarion.agents.scenarios import ToolOutcome, play

if TYPE_CHECKING:  # imported for real in the background at start (see _MCP_CALL_MODULE)
    from clarion.agents.mcp_call import McpConnection

logger = logging.getLogger("clarion.agents.builtin")

ASK_TOOL = "ask_user_question"

# The MCP client stack takes about a second to import. It is loaded in a background thread at
# start, so the ACP handshake does not wait for it and the first question does not pay for it.
_MCP_CALL_MODULE = "clarion.agents.mcp_call"

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
McpServerSpec = HttpMcpServer | SseMcpServer | acp.schema.AcpMcpServer | McpServerStdio


@dataclass(frozen=True, slots=True)
class _Endpoint:
    url: str
    headers: dict[str, str]


@dataclass(slots=True)
class _Session:
    endpoint: _Endpoint | None
    running: asyncio.Task[Any] | None = None
    mcp: McpConnection | None = None  # opened on the session's first question


class _Host:
    """What scenarios see of one running prompt."""

    def __init__(self, agent: BuiltinAgent, session_id: str, session: _Session):
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
        # Waits for the background import without blocking the event loop.
        mcp_call = await asyncio.to_thread(importlib.import_module, _MCP_CALL_MODULE)
        if self._session.mcp is None:
            self._session.mcp = mcp_call.McpConnection(self._endpoint.url, self._endpoint.headers)
        outcome: ToolOutcome = await self._session.mcp.call_tool(
            ASK_TOOL, arguments, read_timeout=read_timeout
        )
        if report_end:
            ok = not (outcome.is_error or outcome.timed_out or outcome.failure)
            status: Literal["completed", "failed"] = "completed" if ok else "failed"
            await self._agent.send(self._session_id, acp.update_tool_call(call_id, status=status))
        return outcome

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


class BuiltinAgent:
    """The ACP agent side. Methods it lacks answer `method not found` through the SDK router."""

    def __init__(self) -> None:
        self._conn: acp.Client | None = None
        self._sessions: dict[str, _Session] = {}
        self.call_ids = itertools.count(1)

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> acp.Client | None:
        return self._conn

    async def send(self, session_id: str, update: Any) -> None:
        assert self._conn is not None, "on_connect runs before any request"
        await self._conn.session_update(session_id=session_id, update=update)

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(mcp_capabilities=McpCapabilities(http=True)),
            agent_info=Implementation(name="clarion-builtin", version="1"),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServerSpec] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        endpoint = None
        for server in mcp_servers or []:
            if isinstance(server, HttpMcpServer):
                endpoint = _Endpoint(url=server.url, headers=_headers(server.headers))
                break
        session_id = uuid.uuid4().hex
        self._sessions[session_id] = _Session(endpoint=endpoint)
        logger.info("session %s: mcp endpoint %s", session_id, endpoint.url if endpoint else None)
        return NewSessionResponse(session_id=session_id)

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise acp.RequestError.invalid_params({"sessionId": f"unknown session {session_id}"})
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
        # The SDK does not cancel a running prompt on session/cancel; cancel() does, via this.
        task = asyncio.current_task()
        session.running = task
        try:
            await play(_Host(self, session_id, session), text)
        except asyncio.CancelledError:
            if task is not None:
                task.uncancel()
            return PromptResponse(stop_reason="cancelled")
        finally:
            if session.running is task:
                session.running = None
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.running is not None:
            session.running.cancel()


def _headers(headers: list[HttpHeader]) -> dict[str, str]:
    return {h.name: h.value for h in headers}


async def exit_when_orphaned(interval_s: float = 0.5) -> None:
    """Exit once the process that started us is gone.

    Clarion stops its agents itself (stdin closed, then signals), but a server that is killed
    outright cannot, and an agent holding a prompt open (`ask-silent`) would otherwise outlive
    it. The kernel re-parents an orphan, which is what this watches for."""
    parent = os.getppid()
    # No event exists for a parent's death; polling getppid is the portable way to see it.
    while os.getppid() == parent:  # noqa: ASYNC110
        await asyncio.sleep(interval_s)
    logger.warning("the process that started this agent is gone; exiting")
    logging.shutdown()
    os._exit(0)


async def serve(agent: Any) -> None:
    """Run an ACP agent on stdio until its client leaves."""
    watcher = asyncio.create_task(exit_when_orphaned())
    try:
        await acp.run_agent(cast(acp.Agent, agent))
    finally:
        watcher.cancel()


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("CLARION_AGENT_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    threading.Thread(target=importlib.import_module, args=(_MCP_CALL_MODULE,), daemon=True).start()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(BuiltinAgent()))


if __name__ == "__main__":
    main()
