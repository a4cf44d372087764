"""Fault points: parsing CLARION_FAILPOINTS and what each action does when a point is hit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from clarion.domain.errors import InjectedFailure
from clarion.runtime import failpoints


@pytest.fixture(autouse=True)
def _unset() -> Iterator[None]:
    failpoints.configure("")
    yield
    failpoints.configure("")


CONTRACT_POINTS = frozenset(
    {
        "respond.after_claim",
        "live.before_confirm",
        "resume.after_reserve",
        "resume.agent_ready",
        "resume.after_attempt",
        "resume.dispatch",
        "resume.after_accept",
        "resume.publish",
        "summary.cas",
        "projection.read",
        "startup.reservations",
        "startup.intents",
    }
)


# Points of our own, beyond the contract's table (each tested where it is used).
OWN_POINTS = frozenset(
    {
        "email.after_send",
        "worktree.before_add",
        "worktree.after_add",
        "worktree.before_remove",
        "slack.after_post",
        "slack.after_ack",
    }
)


def test_every_contract_point_is_known() -> None:
    assert failpoints.KNOWN_POINTS == CONTRACT_POINTS | OWN_POINTS


def test_a_spec_parses_into_actions_ignoring_blanks_and_spaces() -> None:
    spec = " respond.after_claim=crash, ,summary.cas = error,resume.dispatch=delay_ms:250,"
    assert failpoints.parse(spec) == {
        "respond.after_claim": "crash",
        "summary.cas": "error",
        "resume.dispatch": "delay_ms:250",
    }


def test_an_empty_spec_sets_nothing() -> None:
    assert failpoints.parse("") == {}


@pytest.mark.parametrize(
    "entry", ["nope=crash", "respond.after_claim", "=error", "Summary.cas=error"]
)
def test_an_unknown_or_nameless_point_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="unknown fault point"):
        failpoints.parse(entry)


@pytest.mark.parametrize(
    "action", ["", "explode", "delay_ms", "delay_ms:", "delay_ms:-5", "delay_ms:1.5", "ERROR"]
)
def test_a_bad_action_is_refused_naming_the_point(action: str) -> None:
    with pytest.raises(ValueError, match=r"bad action for fault point summary\.cas"):
        failpoints.parse(f"summary.cas={action}")


def test_configuring_a_mapping_is_checked_like_a_spec() -> None:
    with pytest.raises(ValueError, match="unknown fault point"):
        failpoints.configure({"nope": "error"})
    with pytest.raises(ValueError, match="bad action"):
        failpoints.configure({"summary.cas": "explode"})


async def test_error_raises_injected_failure_every_time() -> None:
    failpoints.configure("resume.publish=error")
    for _ in range(2):
        with pytest.raises(InjectedFailure) as caught:
            await failpoints.hit("resume.publish")
        assert caught.value.ids == {"failpoint": "resume.publish"}
    await failpoints.hit("summary.cas")  # other points stay silent


async def test_delay_waits_about_that_long_without_blocking_the_loop() -> None:
    failpoints.configure("projection.read=delay_ms:100")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    background = asyncio.create_task(ticker())
    started = time.monotonic()
    await failpoints.hit("projection.read")
    elapsed = time.monotonic() - started
    background.cancel()
    assert 0.09 <= elapsed < 5
    assert ticks >= 2


def test_an_unset_point_returns_without_suspending() -> None:
    coro = failpoints.hit("respond.after_claim")
    # A coroutine that finishes on its first step never yielded to the event loop.
    with pytest.raises(StopIteration):
        coro.send(None)


def test_reconfiguring_replaces_the_previous_points() -> None:
    failpoints.configure("summary.cas=error")
    failpoints.configure("projection.read=error")
    coro = failpoints.hit("summary.cas")
    with pytest.raises(StopIteration):
        coro.send(None)


def test_crash_exits_137_at_once_without_cleanup() -> None:
    script = textwrap.dedent(
        """
        import asyncio, atexit
        from clarion.runtime import failpoints
        atexit.register(lambda: print("cleanup ran", flush=True))
        failpoints.configure("resume.after_attempt=crash")
        asyncio.run(failpoints.hit("resume.after_attempt"))
        print("survived", flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 137
    assert "survived" not in done.stdout
    assert "cleanup ran" not in done.stdout
