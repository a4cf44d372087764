"""The MCP server is loaded as the first agent is launched, in the background, so that the
agent's first MCP request finds it ready: some agents give tool discovery only a few seconds."""

from __future__ import annotations

import asyncio
import time

import pytest

from clarion.mcp.tools import McpEndpoint
from clarion.orchestrator.launch import Launcher, SessionTokens
from tests.domain.builders import session
from tests.tool.mcp_endpoint_steps import Builds, initialize_calls

CEILING_S = 60


async def _built(builds: Builds) -> None:
    assert await asyncio.to_thread(builds.called.wait, CEILING_S), "nothing built the server"


async def test_warming_loads_the_server_once_and_the_first_request_uses_that_load() -> None:
    builds = Builds(failures=0, error=AssertionError("unused"))
    endpoints: list[McpEndpoint] = []
    async with initialize_calls(builds, endpoints.append) as initialize:
        endpoints[0].warm()
        endpoints[0].warm()  # a second launch meanwhile starts no second load
        await _built(builds)
        answered = await initialize()
    assert answered.status_code == 200, answered.text
    assert builds.calls == 1


async def test_a_failed_warm_load_is_logged_and_the_next_request_loads_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    builds = Builds(failures=1, error=ImportError("the SDK could not be imported"))
    endpoints: list[McpEndpoint] = []
    async with initialize_calls(builds, endpoints.append) as initialize:
        endpoints[0].warm()
        await _logged(caplog, "loading the MCP server failed")
        answered = await initialize()
    assert answered.status_code == 200, answered.text
    assert builds.calls == 2


async def _logged(caplog: pytest.LogCaptureFixture, message: str) -> None:
    deadline = time.monotonic() + CEILING_S
    while not any(message in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, f"nothing logged {message!r}"
        await asyncio.sleep(0.01)


def test_every_launch_prepares_the_agents_tools_first_naming_its_profile() -> None:
    prepared: list[str] = []
    launcher = Launcher(SessionTokens(), lambda: "http://clarion", prepare_tools=prepared.append)
    the_session = session()
    launch = launcher.launch_for(the_session)
    assert prepared == [the_session.agent]
    assert launch.mcp_url == f"http://clarion/mcp/sessions/{the_session.id}"
