"""Fixtures for answer links: the real services in process (tests/lifecycle/harness.py) on
an injected clock, the real ASGI application in front of them, and helpers to sign tokens."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from clarion.api.app import create_app
from clarion.config import Settings
from clarion.runtime import failpoints
from clarion.runtime.clock import ManualClock
from tests.lifecycle.harness import Lifecycle, fast_settings, lifecycle_on

BASE = "http://clarion.test"


@pytest.fixture(autouse=True)
def _no_failpoints() -> Iterator[None]:
    failpoints.configure("")
    yield
    failpoints.configure("")


@dataclasses.dataclass
class Linked:
    life: Lifecycle
    http: httpx.AsyncClient
    clock: ManualClock

    def token_of(self, answer_url: str) -> str:
        assert answer_url.startswith("http"), answer_url
        return answer_url.rsplit("/a/", 1)[1]

    async def link_for(self, pending_id: str) -> str:
        """The token of the bundle's answer link, as `GET /clarification/{id}` hands it out."""
        read = await self.http.get(f"/api/v1/clarification/{pending_id}", headers=self.admin)
        assert read.status_code == 200, read.text
        return self.token_of(read.json()["answer_url"])

    admin: dict[str, str] = dataclasses.field(default_factory=dict)

    async def rows(self, pending_id: str) -> list[dict[str, Any]]:
        bundle = await self.life.store.find_bundle(pending_id)
        assert bundle is not None
        return [dict(m.metadata) for m in bundle.rows]


@contextlib.asynccontextmanager
async def linked_app(settings: Settings, clock: ManualClock) -> AsyncIterator[Linked]:
    async with (
        lifecycle_on(settings, clock=clock) as life,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(life.app.services, life.app.mcp)),
            base_url=BASE,
        ) as http,
    ):
        yield Linked(life, http, clock)


def settings_on(database_url: str, **changes: Any) -> Settings:
    return dataclasses.replace(fast_settings(database_url), **changes)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 5, 1, 9, 0, tzinfo=UTC))


@pytest.fixture
async def linked(store_url: str, clock: ManualClock) -> AsyncIterator[Linked]:
    settings = settings_on(store_url, public_url="https://clarion.example")
    async with linked_app(settings, clock) as rig:
        yield rig
