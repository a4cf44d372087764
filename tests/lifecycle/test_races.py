"""Two real responders racing for one bundle, round after round: exactly one wins each time,
and a detached answer produces exactly one successor turn and one dispatch.

Each round is seeded: both responders yield to the loop a seeded number of times before they
start, so the rounds cover who claims first, both inside one loop step, and one starting while
the other is mid-claim. A failing round names its seed; the same seed replays it."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Sequence

import pytest

from clarion.clarification.respond_result import RespondResult
from clarion.domain.errors import NotActive
from tests.lifecycle.harness import Lifecycle, answer_db, running_lifecycle

ROUNDS = 24
MAX_YIELDS = 6  # loop steps a responder may wait before it starts; a claim takes a few
RESUME = "You previously asked the user:"


@pytest.fixture
async def life(store_url: str) -> AsyncIterator[Lifecycle]:
    # The scripted agent stays silent after each answer; keep the watchdog out of the race.
    async with running_lifecycle(store_url, watchdog=600) as lifecycle:
        yield lifecycle


async def race(life: Lifecycle, pending_id: str, seed: int) -> list[object]:
    """Both responders, each starting after its seeded number of loop yields."""
    rng = random.Random(seed)
    resolver = life.app.services.resolver

    async def respond_after(yields: int, option: str) -> RespondResult:
        for _ in range(yields):
            await asyncio.sleep(0)
        return await resolver.respond(pending_id, answer_db(option))

    return list(
        await asyncio.gather(
            respond_after(rng.randint(0, MAX_YIELDS), "sqlite"),
            respond_after(rng.randint(0, MAX_YIELDS), "mongodb"),
            return_exceptions=True,
        )
    )


def outcomes(results: Sequence[object]) -> tuple[list[RespondResult], list[NotActive]]:
    wins = [r for r in results if isinstance(r, RespondResult)]
    losses = [r for r in results if isinstance(r, NotActive)]
    assert len(wins) + len(losses) == len(results), f"unexpected outcomes: {results!r}"
    return wins, losses


async def test_concurrent_live_responders_exactly_one_wins(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    winners: set[str] = set()
    for round_ in range(ROUNDS):
        call, pending_id = await life.ask(session_id)
        results = await race(life, pending_id, seed=round_)
        wins, losses = outcomes(results)
        assert len(wins) == 1 and len(losses) == 1, (
            f"seed {round_}: {[(type(r).__name__, getattr(r, 'state', None)) for r in results]}"
        )
        assert losses[0].state in {"delivery_claimed", "terminal"}
        winner = wins[0].response.answers[0].selected_options
        winners.add(winner[0])
        delivered = await asyncio.wait_for(call, 5)
        assert winner[0] in delivered, "the agent got the winner's answer"
    assert winners == {"sqlite", "mongodb"}, "the seeded yields let either side win"


async def test_concurrent_detached_responders_make_one_successor(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    winners: set[str] = set()
    for round_ in range(ROUNDS):
        call, pending_id = await life.ask(session_id)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await life.runtime.end_turn(session_id)
        turns_before = len(await life.store.list_visible_turns(session_id))
        results = await race(life, pending_id, seed=round_)
        wins, losses = outcomes(results)
        assert len(wins) == 1 and len(losses) == 1, f"seed {round_}: {results!r}"
        assert wins[0].resumed
        winners.add(wins[0].response.answers[0].selected_options[0])
        turns_after = await life.store.list_visible_turns(session_id)
        assert len(turns_after) == turns_before + 1, f"seed {round_}: one successor"
    resumes = [t for _, t, _ in life.runtime.prompts if t.startswith(RESUME)]
    assert len(resumes) == ROUNDS, "each answer dispatched exactly once"
    assert winners == {"sqlite", "mongodb"}, "the seeded yields let either side win"
