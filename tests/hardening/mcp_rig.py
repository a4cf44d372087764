"""An in-process Clarion for talking raw JSON-RPC to a session's MCP endpoint.

The agent runtime only records how each agent was launched, so the test can read the session's
MCP secret; requests go through the real app (auth gate, endpoint, MCP session manager).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from clarion.api.app import create_app
from clarion.config import AgentProfile, Settings, builtin_profile
from clarion.ports import AgentSink
from clarion.server.wiring import App, build
from tests.auth.test_mcp_secrets import RecordingRuntime
from tests.tool.mcp_endpoint_steps import ACCEPT, INITIALIZE


def rpc(id_: int | None, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        body["id"] = id_
    if params is not None:
        body["params"] = params
    return body


def messages_of(response: httpx.Response) -> list[dict[str, Any]]:
    """JSON-RPC messages in a response, whether plain JSON or an event stream."""
    if not response.content:
        return []
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(line[5:])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    body = response.json()
    return body if isinstance(body, list) else [body]


@dataclass
class McpRig:
    client: httpx.AsyncClient
    app: App
    session_id: str
    secret: str
    runtime: RecordingRuntime
    tcp_url: str  # the same app served over a real socket (disconnects are real there)

    @property
    def path(self) -> str:
        return f"/mcp/sessions/{self.session_id}"

    def headers(self, mcp_session: str | None = None) -> dict[str, str]:
        headers = {**ACCEPT, "X-Clarion-Token": self.secret}
        if mcp_session is not None:
            headers["Mcp-Session-Id"] = mcp_session
        return headers

    async def post(self, body: Any, mcp_session: str | None = None) -> httpx.Response:
        return await self.client.post(self.path, json=body, headers=self.headers(mcp_session))

    async def initialize(self) -> str:
        response = await self.post(INITIALIZE)
        assert response.status_code == 200, response.text
        mcp_session = response.headers["mcp-session-id"]
        done = await self.post(rpc(None, "notifications/initialized"), mcp_session)
        assert done.status_code == 202, done.text
        return mcp_session

    async def call(self, mcp_session: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": "ask_user_question", "arguments": arguments}
        response = await self.post(rpc(7, "tools/call", params), mcp_session)
        assert response.status_code == 200, response.text
        (message,) = [m for m in messages_of(response) if m.get("id") == 7]
        return dict(message)


@asynccontextmanager
async def mcp_rig(tmp_path: Path) -> AsyncIterator[McpRig]:
    holder: dict[str, RecordingRuntime] = {}

    def factory(profiles: Mapping[str, AgentProfile], sink: AgentSink) -> RecordingRuntime:
        holder["runtime"] = RecordingRuntime(profiles, sink)
        return holder["runtime"]

    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'c.db'}", agents={"builtin": builtin_profile()}
    )
    async with build(settings, lambda: "http://test", runtime_factory=factory) as app:
        await app.recovery.run()
        app.services.ready.set()
        task = await app.services.tasks.create(title="t", description="", workspace=None)
        session = await app.services.sessions.start(
            task.id, agent="builtin", prompt="a", is_primary=True
        )
        secret = holder["runtime"].launches[session.id].mcp_token
        asgi = create_app(app.services, app.mcp)
        transport = httpx.ASGITransport(app=asgi)
        # The rig runs the MCP session manager itself (anyio scopes may not cross tasks), so
        # the served app's own lifespan stays off.
        # log_config None: uvicorn's own records reach the root logger (and caplog).
        config = uvicorn.Config(asgi, host="127.0.0.1", port=0, lifespan="off", log_config=None)
        server = uvicorn.Server(config)
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://test") as client,
            app.mcp.server.session_manager.run(),
        ):
            serving = asyncio.create_task(server.serve())
            try:
                while not server.started:
                    assert not serving.done(), "uvicorn stopped before it started"
                    await asyncio.sleep(0.01)
                port = server.servers[0].sockets[0].getsockname()[1]
                runtime = holder["runtime"]
                yield McpRig(client, app, session.id, secret, runtime, f"http://127.0.0.1:{port}")
            finally:
                server.should_exit = True
                await serving
