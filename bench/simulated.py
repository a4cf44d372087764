"""Agents simulated by MCP clients: the benchmark calls the real `ask_user_question` tool itself.

A session is started with the `relay` agent profile (`bench.relay_agent`), which holds its turn
open and leaves the session's MCP URL and secret header in the relay directory. The benchmark
then opens one MCP client per session over streamable HTTP, kept for the whole measurement as
a real agent keeps its MCP connection, and runs cycles on it: call the tool (ask) -> the
question's `session.message.added` on the WebSocket -> POST the answer -> the tool call
returns with the answer (the agent resumes in the same turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from httpx2 import AsyncClient, Limits, Timeout
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.client import KEEPALIVE_EXPIRY_S, Api, is_question, is_summary, pending_id_of, wait
from bench.context import Ctx

TOOL = "ask_user_question"
QUESTION = {
    "questions": [
        {
            "id": "db",
            "prompt": "Which database?",
            "options": [
                {"option_id": "postgres", "label": "PostgreSQL"},
                {"option_id": "sqlite", "label": "SQLite"},
            ],
        }
    ]
}


@dataclass(frozen=True)
class Cycle:
    """One ask -> answer -> resume, in seconds from the answer POST being sent."""

    to_200: float
    to_tool_return: float


async def relay_session(ctx: Ctx, task_id: str, limit: float = 120) -> tuple[str, dict[str, Any]]:
    """Start a relay-agent session; returns (session id, its MCP endpoint {url, headers})."""
    session_id = await ctx.api.start_session(task_id, "hold the turn", agent="relay")
    return session_id, await relay_endpoint(ctx, session_id, limit)


async def relay_endpoint(ctx: Ctx, session_id: str, limit: float = 120) -> dict[str, Any]:
    """The MCP endpoint {url, headers} a relay agent received for `session_id`."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        for path in ctx.server.relay_dir.glob("*.json"):
            endpoint: dict[str, Any] = json.loads(path.read_text())
            if endpoint["url"].rstrip("/").endswith(f"/{session_id}"):
                path.unlink()
                return endpoint
        await asyncio.sleep(0.02)
    raise RuntimeError(f"relay agent of session {session_id} never reported its MCP endpoint")


class SimulatedAgent:
    """One session's MCP client, asking and being answered in a loop."""

    def __init__(self, ctx: Ctx, session_id: str, client: Client) -> None:
        self._ctx = ctx
        self.session_id = session_id
        self._client = client

    @property
    def client(self) -> Client:
        return self._client

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls, ctx: Ctx, session_id: str, endpoint: dict[str, Any]
    ) -> AsyncIterator[SimulatedAgent]:
        timeout = Timeout(30.0, read=300.0)
        limits = Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S)
        async with (
            AsyncClient(headers=endpoint["headers"], timeout=timeout, limits=limits) as http,
            Client(streamable_http_client(endpoint["url"], http_client=http), mode="legacy") as mc,
        ):
            yield cls(ctx, session_id, mc)

    async def cycle(
        self, *, quiet_task_id: str | None = None, answer_to: Api | None = None
    ) -> Cycle:
        """One cycle. With `quiet_task_id` the answer is sent only once the server finished
        the question's follow-up work (the task summary turned to clarification), and the
        cycle ends only once the answer's follow-up work is done too (the summary is clean):
        each answer then meets an otherwise idle server. The answer is POSTed through
        `answer_to` (another server of a cluster), by default through the context's API."""
        feed = self._ctx.feed
        question = feed.expect(self.session_id, is_question)
        asked = feed.expect(quiet_task_id, is_summary("clarification")) if quiet_task_id else None
        call = asyncio.ensure_future(self._client.call_tool(TOOL, QUESTION))
        try:
            _, note = await wait(question)
            if asked is not None:
                await wait(asked)
            cleared = feed.expect(quiet_task_id, is_summary(None)) if quiet_task_id else None
            began = time.perf_counter()
            to_200, body = await (answer_to or self._ctx.api).respond(pending_id_of(note))
            if body.get("resumed"):
                raise RuntimeError(f"live answer unexpectedly resumed: {body}")
            result = await call
            returned = time.perf_counter()
            if cleared is not None:
                await wait(cleared)
        finally:
            call.cancel()
        if result.is_error:
            raise RuntimeError(f"tool call failed: {result.content}")
        return Cycle(to_200=to_200, to_tool_return=returned - began)
