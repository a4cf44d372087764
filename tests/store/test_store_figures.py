"""Store contract: the operator's figures (metrics gauges) in one read-only snapshot."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import insert

from clarion.domain.models import SessionState
from clarion.store.db.schema import webhook_deliveries

from .conftest import World


async def test_figures_of_an_empty_database_are_all_zero(world: World) -> None:
    figures = await world.store.operational_figures()
    assert figures.waiting == ()
    assert dict(figures.sessions) == {}
    assert figures.permissions_pending == 0
    assert dict(figures.deliveries) == {"pending": 0, "failed": 0}
    assert figures.replicas == 0
    assert figures.now == world.clock.now()


async def test_figures_name_each_waiting_question_with_its_workspace_and_asked_time(
    world: World,
) -> None:
    asking = await world.session()
    turn = await world.turn(asking)
    rows = await world.bundle(asking, ("db", "lang"), turn_id=turn.id)
    # A question of a superseded turn is history, not waiting.
    older = await world.session()
    stale = await world.turn(older)
    await world.bundle(older, turn_id=stale.id)
    await world.turn(older)
    ended = await world.session()
    await world.store.transition_session(ended.id, SessionState.COMPLETED)

    figures = await world.store.operational_figures()

    assert [(q.pending_id, q.workspace) for q in figures.waiting] == [
        (rows[0].metadata["pending_id"], "default")
    ]
    assert figures.waiting[0].asked_at == rows[0].created_at
    assert figures.sessions == {"CREATED": 2, "COMPLETED": 1}


async def test_figures_count_open_and_given_up_webhook_deliveries_only(world: World) -> None:
    now = world.clock.now()
    base = {
        "url": "http://x",
        "event": "e",
        "body": "{}",
        "next_attempt_at": now,
        "created_at": now,
        "delivered_at": None,
        "gave_up_at": None,
    }
    async with world.store.engine.begin() as conn:
        await conn.execute(
            insert(webhook_deliveries),
            [
                {**base, "id": "open1", "attempts": 0},
                {**base, "id": "open2", "attempts": 3},
                {**base, "id": "sent", "attempts": 1, "delivered_at": now},
                {**base, "id": "dead", "attempts": 10, "gave_up_at": now + timedelta(seconds=1)},
            ],
        )
    figures = await world.store.operational_figures()
    assert dict(figures.deliveries) == {"pending": 2, "failed": 1}
