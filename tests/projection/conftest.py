"""Fixtures for the projection suite: a real store (SQLite, or both backends through `db_url`),
an injected clock, the world builder, and no fault points left set between tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clarion.runtime import failpoints
from clarion.runtime.clock import ManualClock
from tests.projection.builders import World
from tests.whole_store import WholeStore, open_whole_store


@pytest.fixture(autouse=True)
def _no_failpoints() -> Iterator[None]:
    failpoints.configure("")
    yield
    failpoints.configure("")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC))


@pytest.fixture
async def store(tmp_path: Path, clock: ManualClock) -> AsyncIterator[WholeStore]:
    """A SQLite store: for rules that do not depend on the backend."""
    async with open_whole_store(f"sqlite:///{tmp_path / 'projection.db'}", clock) as opened:
        yield opened


@pytest.fixture
async def any_store(db_url: str, clock: ManualClock) -> AsyncIterator[WholeStore]:
    """A store on each backend: for behaviour where the database matters."""
    async with open_whole_store(db_url, clock) as opened:
        yield opened


@pytest.fixture
def world(store: WholeStore, clock: ManualClock) -> World:
    return World(store, clock)
