"""The MCP endpoint accepts only its own session's secret; nothing else reaches the tool.

In process, so the test can read the secret each agent was launched with: two sessions, and
session A's endpoint refuses no secret, a wrong one and session B's, while A's own works.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from clarion.api.app import create_app
from clarion.config import AgentProfile, Settings, builtin_profile
from clarion.mcp.tools import McpEndpoint
from clarion.ports import AcpSessionInfo, AgentLaunch, AgentSink
from clarion.server.wiring import build
from tests.tool.mcp_endpoint_steps import ACCEPT, INITIALIZE

ASK = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "ask_user_question",
        "arguments": {
            "questions": [
                {"prompt": "Which?", "options": [{"label": "A"}, {"label": "B"}]},
            ]
        },
    },
}


@dataclass
class RecordingRuntime:
    """An agent runtime that only remembers how each agent was launched."""

    profiles: Mapping[str, AgentProfile]
    sink: AgentSink
    launches: dict[str, AgentLaunch] = field(default_factory=dict)

    async def __aenter__(self) -> RecordingRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def ensure_started(self, launch: AgentLaunch) -> bool:
        started = launch.session_id not in self.launches
        self.launches[launch.session_id] = launch
        return started

    async def prompt(self, session_id: str, text: str, *, generation: int) -> None:
        return None

    async def cancel(self, session_id: str) -> None:
        return None

    async def stop(self, session_id: str) -> None:
        return None

    def is_running(self, session_id: str) -> bool:
        return session_id in self.launches

    def running_sessions(self) -> frozenset[str]:
        return frozenset(self.launches)

    def acp_session(self, session_id: str) -> AcpSessionInfo | None:
        return None


@dataclass
class Rig:
    client: httpx.AsyncClient
    runtime: RecordingRuntime
    sessions: tuple[str, str]
    messages: Any  # async (session_id) -> list of message ids
    mcp: McpEndpoint


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
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
        a = await app.services.sessions.start(task.id, agent="builtin", prompt="a", is_primary=True)
        b = await app.services.sessions.start(
            task.id, agent="builtin", prompt="b", is_primary=False
        )

        async def messages(session_id: str) -> list[str]:
            page = await app.stores.reads.list_messages(session_id, limit=1000)
            return [m.id for m in page.messages]

        transport = httpx.ASGITransport(app=create_app(app.services, app.mcp))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield Rig(client, holder["runtime"], (a.id, b.id), messages, app.mcp)


async def test_session_endpoint_refuses_every_secret_but_its_own(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = rig.sessions
    secret_a = rig.runtime.launches[a].mcp_token
    secret_b = rig.runtime.launches[b].mcp_token
    assert secret_a != secret_b
    before = await rig.messages(a)

    # The MCP session manager runs in the test's own task (anyio scopes may not cross tasks).
    with caplog.at_level(logging.DEBUG):
        for headers in ({}, {"X-Clarion-Token": "wrong"}, {"X-Clarion-Token": secret_b}):
            for body in (INITIALIZE, ASK):
                response = await rig.client.post(
                    f"/mcp/sessions/{a}", json=body, headers={**ACCEPT, **headers}
                )
                assert response.status_code == 401, headers
                assert response.json()["error"]["code"] == "unauthenticated"
        async with rig.mcp.server.session_manager.run():
            # A secret is tied to its session's path, not just to "some session".
            foreign = await rig.client.post(
                f"/mcp/sessions/{a}",
                json=INITIALIZE,
                headers={**ACCEPT, "X-Clarion-Token": secret_b},
            )
            own = await rig.client.post(
                f"/mcp/sessions/{a}",
                json=INITIALIZE,
                headers={**ACCEPT, "X-Clarion-Token": secret_a},
            )

    assert foreign.status_code == 401
    assert own.status_code == 200, own.text  # the refusals above were about the secret
    assert await rig.messages(a) == before  # no question was asked, nothing was written
    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "MCP request refused" in logged
    assert secret_a not in logged and secret_b not in logged


async def test_a_get_for_a_standalone_stream_is_405_after_the_secret_check_and_opens_nothing(
    rig: Rig,
) -> None:
    # Clarion sends nothing outside a tool call, so it offers no standalone SSE stream: held
    # open by every agent, that stream cost each session a second request and its pings.
    a, _ = rig.sessions
    secret_a = rig.runtime.launches[a].mcp_token
    stream = {"Accept": "text/event-stream"}
    refused = await rig.client.get(f"/mcp/sessions/{a}", headers=stream)
    assert refused.status_code == 401
    async with rig.mcp.server.session_manager.run():
        opened = await rig.client.post(
            f"/mcp/sessions/{a}", json=INITIALIZE, headers={**ACCEPT, "X-Clarion-Token": secret_a}
        )
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
        # An opened stream would never end: the ceiling turns that into a failure.
        got = await asyncio.wait_for(
            rig.client.get(
                f"/mcp/sessions/{a}", headers={**stream, **session, "X-Clarion-Token": secret_a}
            ),
            10,
        )
    assert got.status_code == 405
    assert got.headers["allow"] == "POST, DELETE"
    assert got.json()["error"]["code"] == "method_not_allowed"
