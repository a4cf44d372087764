"""Fixtures for the bus contract suite: `bus` is an open bus of each kind, isolated per test.

The NATS case carries the `nats` marker and uses CLARION_TEST_NATS_URL (default
nats://127.0.0.1:4222) with a subject prefix of its own, so tests never see each other's events.
When NATS is unreachable it skips, or fails when CI or CLARION_REQUIRE_SERVICES is set.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from clarion.bus import MemoryBus, NatsBus

NATS_URL = os.environ.get("CLARION_TEST_NATS_URL", "nats://127.0.0.1:4222")


def services_required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("CLARION_REQUIRE_SERVICES"))


def nats_unavailable() -> str | None:
    """None when something accepts TCP connections at NATS_URL, else the reason."""
    parts = urlsplit(NATS_URL)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 4222), 2):
            return None
    except OSError as exc:
        return f"NATS at {NATS_URL} unreachable: {exc!r}"


def require_nats() -> None:
    reason = nats_unavailable()
    if reason is None:
        return
    if services_required():
        pytest.fail(reason)
    pytest.skip(reason)


def unique_prefix() -> str:
    return f"test.{uuid.uuid4().hex}"


@pytest.fixture
def nats_url() -> str:
    require_nats()
    return NATS_URL


@pytest.fixture(
    params=[
        pytest.param("memory", id="memory"),
        pytest.param("nats", id="nats", marks=pytest.mark.nats),
    ]
)
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[MemoryBus | NatsBus]:
    if request.param == "memory":
        async with MemoryBus() as memory:
            yield memory
        return
    require_nats()
    async with NatsBus(NATS_URL, subject_prefix=unique_prefix()) as nats_bus:
        yield nats_bus
