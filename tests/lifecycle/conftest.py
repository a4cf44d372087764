from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from clarion.runtime import failpoints
from tests.lifecycle.harness import Lifecycle, running_lifecycle


@pytest.fixture(autouse=True)
def _no_failpoints() -> Iterator[None]:
    failpoints.configure("")
    yield
    failpoints.configure("")


@pytest.fixture
async def life(store_url: str) -> AsyncIterator[Lifecycle]:
    async with running_lifecycle(store_url) as lifecycle:
        yield lifecycle
