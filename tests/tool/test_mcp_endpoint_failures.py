"""What the MCP endpoint does when loading the SDK or starting its session manager fails: the
request that ran into it fails and says why, and the next request tries again from the start
instead of inheriting the failure, so one bad moment does not leave a server's agents without
their tool until it restarts."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from tests.tool.mcp_endpoint_steps import Builds, initialize_calls


async def test_a_failed_sdk_load_fails_its_request_and_the_next_request_loads_again() -> None:
    builds = Builds(failures=1, error=ImportError("the SDK could not be imported"))
    async with initialize_calls(builds) as initialize:
        with pytest.raises(ImportError, match="could not be imported"):
            await initialize()
        answered = await initialize()
    assert answered.status_code == 200, answered.text
    assert builds.calls == 2


async def test_a_session_manager_that_fails_to_start_fails_its_request_and_the_next_starts_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_run = StreamableHTTPSessionManager.run
    starts: list[str] = []

    @contextlib.asynccontextmanager
    async def run_failing_once(self: StreamableHTTPSessionManager) -> AsyncIterator[None]:
        starts.append("start")
        if len(starts) == 1:
            raise RuntimeError("the session manager could not start")
        async with real_run(self):
            yield

    monkeypatch.setattr(StreamableHTTPSessionManager, "run", run_failing_once)
    builds = Builds(failures=0, error=AssertionError("unused"))
    async with initialize_calls(builds) as initialize:
        with pytest.raises(RuntimeError, match="could not start"):
            await initialize()
        answered = await initialize()
    assert answered.status_code == 200, answered.text
    assert (builds.calls, len(starts)) == (2, 2)
