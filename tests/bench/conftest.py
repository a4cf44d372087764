"""The bench smokes run the benchmark's own code, which coverage does not count (it measures
`clarion` alone), against servers, agents and simulated clients that it starts. Those processes
run without coverage's subprocess hand-off: what they run of Clarion the end-to-end tests
cover, and tracing them would cost about a third more CPU for figures nobody reads."""

from __future__ import annotations

import pytest

from tests.untraced import COVERAGE_HANDOFF


@pytest.fixture(autouse=True)
def untraced_children(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in COVERAGE_HANDOFF:
        monkeypatch.delenv(name, raising=False)
