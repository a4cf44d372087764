"""The server's collector after start-up: what start-up built is frozen, and young collections
run rarely enough that a full one does not follow every few hundred requests."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from clarion.server.collector import YOUNG_COLLECTION_EVERY

_SETTLE_AND_REPORT = """
import gc, json
from clarion.server.collector import settle_after_startup
kept = [[i] for i in range(1000)]  # live objects start-up made
default = gc.get_threshold()
settle_after_startup()
print(json.dumps({"default": default, "now": gc.get_threshold(), "frozen": gc.get_freeze_count()}))
"""


@pytest.fixture(scope="module")
def report() -> dict[str, list[int] | int]:
    """One fresh interpreter's collector, settled: the settings are the process's, so they
    change in a child, never in pytest's."""
    out = subprocess.run(
        [sys.executable, "-c", _SETTLE_AND_REPORT], capture_output=True, text=True, check=True
    )
    settled: dict[str, list[int] | int] = json.loads(out.stdout)
    return settled


def test_settling_freezes_what_start_up_built(report: dict[str, list[int] | int]) -> None:
    assert isinstance(report["frozen"], int) and report["frozen"] >= 1000


def test_settling_raises_the_young_generation_threshold_and_keeps_the_older_ones(
    report: dict[str, list[int] | int],
) -> None:
    default, now = report["default"], report["now"]
    assert isinstance(default, list) and isinstance(now, list)
    assert now[0] == YOUNG_COLLECTION_EVERY > default[0]
    assert now[1:] == default[1:]
