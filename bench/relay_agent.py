"""`python -m bench.relay_agent`: an ACP agent that hands its MCP endpoint to the benchmark.

The throughput and live-latency measurements play the agent's MCP side themselves (an MCP
client per session calling the real `ask_user_question` tool over HTTP), as the benchmark
issue asks. The per-session MCP secret only ever travels in ACP `session/new`, so something
has to receive it: this agent writes each session's MCP URL and headers to a JSON file in
`$CLARION_BENCH_RELAY_DIR` and then holds every prompt open until it is cancelled, so the
session has a running turn for the questions to belong to. It says nothing and calls nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    HttpMcpServer,
    InitializeResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptResponse,
)

from clarion.agents.builtin import serve

RELAY_DIR_ENV = "CLARION_BENCH_RELAY_DIR"


class RelayAgent:
    def __init__(self, relay_dir: Path) -> None:
        self._relay_dir = relay_dir
        # Set by the session's `session/cancel`: its held prompt then ends as cancelled. Only
        # that ends it; the task's own cancellation (the connection closed as the server
        # stops the agent) is left to end the task, so the agent exits at once, not at the
        # end of the server's stop grace (2 s a session).
        self._cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: acp.Client) -> None:
        pass

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(mcp_capabilities=McpCapabilities(http=True)),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = uuid.uuid4().hex
        for server in mcp_servers or []:
            if isinstance(server, HttpMcpServer):
                endpoint = {"url": server.url, "headers": {h.name: h.value for h in server.headers}}
                target = self._relay_dir / f"{session_id}.json"
                partial = target.with_suffix(".tmp")
                partial.write_text(json.dumps(endpoint))
                partial.rename(target)  # readers never see a half-written file
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        cancelled = self._cancelled[session_id] = asyncio.Event()
        try:
            await cancelled.wait()
        finally:
            self._cancelled.pop(session_id, None)
        return PromptResponse(stop_reason="cancelled")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        cancelled = self._cancelled.get(session_id)
        if cancelled is not None:
            cancelled.set()


def main() -> None:
    relay_dir = Path(os.environ[RELAY_DIR_ENV])
    relay_dir.mkdir(parents=True, exist_ok=True)
    asyncio.run(serve(RelayAgent(relay_dir)))


if __name__ == "__main__":
    main()
