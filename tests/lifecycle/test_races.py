"""Two real responders racing for one bundle, many times: exactly one wins each time, and a
detached answer produces exactly one successor turn and one dispatch."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

import pytest

from clarion.clarification.resolver import RespondResult
from clarion.domain.errors import NotActive
from tests.lifecycle.harness import Lifecycle, answer_db, running_lifecycle

ROUNDS = 200
RESUME = "You previously asked the user:"


@pytest.fixture
async def life(store_url: str) -> AsyncIterator[Lifecycle]:
    # The scripted agent stays silent after each answer; keep the watchdog out of the race.
    async with running_lifecycle(store_url, watchdog=600) as lifecycle:
        yield lifecycle


def outcomes(results: Sequence[object]) -> tuple[list[RespondResult], list[NotActive]]:
    wins = [r for r in results if isinstance(r, RespondResult)]
    losses = [r for r in results if isinstance(r, NotActive)]
    assert len(wins) + len(losses) == len(results), f"unexpected outcomes: {results!r}"
    return wins, losses


@pytest.mark.timeout(400)
async def test_concurrent_live_responders_exactly_one_wins(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    resolver = life.app.services.resolver
    for round_ in range(ROUNDS):
        call, pending_id = await life.ask(session_id)
        results = await asyncio.gather(
            resolver.respond(pending_id, answer_db("sqlite")),
            resolver.respond(pending_id, answer_db("mongodb")),
            return_exceptions=True,
        )
        wins, losses = outcomes(results)
        assert len(wins) == 1 and len(losses) == 1, (
            f"round {round_}: {[(type(r).__name__, getattr(r, 'state', None)) for r in results]}"
        )
        assert losses[0].state in {"delivery_claimed", "terminal"}
        winner = wins[0].response.answers[0].selected_options
        delivered = await asyncio.wait_for(call, 5)
        assert winner[0] in delivered, "the agent got the winner's answer"


@pytest.mark.timeout(400)
async def test_concurrent_detached_responders_make_one_successor(life: Lifecycle) -> None:
    _, session_id = await life.start_session()
    resolver = life.app.services.resolver
    for round_ in range(ROUNDS):
        call, pending_id = await life.ask(session_id)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        await life.runtime.end_turn(session_id)
        turns_before = len(await life.store.list_visible_turns(session_id))
        results = await asyncio.gather(
            resolver.respond(pending_id, answer_db("sqlite")),
            resolver.respond(pending_id, answer_db("mongodb")),
            return_exceptions=True,
        )
        wins, losses = outcomes(results)
        assert len(wins) == 1 and len(losses) == 1, f"round {round_}: {results!r}"
        assert wins[0].resumed
        turns_after = await life.store.list_visible_turns(session_id)
        assert len(turns_after) == turns_before + 1, f"round {round_}: one successor"
    resumes = [t for _, t, _ in life.runtime.prompts if t.startswith(RESUME)]
    assert len(resumes) == ROUNDS, "each answer dispatched exactly once"
