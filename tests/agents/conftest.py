"""Fixtures for the agent-layer tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from clarion.agents.runtime import AcpRuntime
from clarion.config import builtin_profile
from tests.agents.agent_harness import AskServer, RecordingSink, serve_ask_server


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
async def runtime(sink: RecordingSink) -> AsyncIterator[AcpRuntime]:
    profile = builtin_profile()
    async with AcpRuntime({profile.name: profile}, sink, stop_grace=1.0) as rt:
        yield rt


@pytest.fixture
async def ask_server() -> AsyncIterator[AskServer]:
    async with serve_ask_server() as server:
        yield server
