"""A smoke run on a loaded host shrinks its work and waits longer, rather than timing out."""

from __future__ import annotations

from bench.run import Sizes

from tests.bench.load import BUSY, smoke_ceiling, smoke_sizes

SIZES = Sizes(idle_sessions=(1, 2))


def test_an_idle_host_runs_the_smoke_sizes_as_given() -> None:
    assert smoke_sizes(SIZES, 0.5) == SIZES
    assert smoke_sizes(SIZES, BUSY) == SIZES
    assert smoke_ceiling(180, 0.5) == 180


def test_a_busy_host_holds_one_idle_session_and_waits_in_proportion_to_its_load() -> None:
    shrunk = smoke_sizes(SIZES, 15.0)  # load 30 on two cores
    assert shrunk.idle_sessions == (1,)
    assert shrunk.live == SIZES.live
    assert smoke_ceiling(180, 15.0) == 2700
