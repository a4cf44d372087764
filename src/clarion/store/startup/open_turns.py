"""Turns left open by the previous process: completed as interrupted (a metadata patch says
so), since no agent is still working on them."""

from __future__ import annotations

from sqlalchemy import bindparam, select, update

from clarion.domain.models import Turn
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.domain.turn_outcomes import TurnOutcome, recorded
from clarion.ports import Clock
from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import JsonText, UtcDateTime
from clarion.store.db.predicates import authoritative
from clarion.store.db.row_conversion import to_turn
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.startup.recovery_sql import STARTUP_LOCK

_OPEN_TURNS = (
    select(turns)
    .where(turns.c.completed_at.is_(None), authoritative(turns))
    .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
)
_COMPLETE_TURN = (
    update(turns)
    .where(turns.c.id == bindparam("turn_id"), turns.c.completed_at.is_(None))
    .values(
        completed_at=bindparam("new_completed_at", type_=UtcDateTime),
        updated_at=bindparam("new_updated_at", type_=UtcDateTime),
        metadata=bindparam("new_metadata", type_=JsonText),
    )
)


async def complete_open_turns(
    db: Db,
    clock: Clock,
    *,
    outcome: TurnOutcome,
    scope: SessionScope = EVERY_SESSION,
) -> list[Turn]:
    now = clock.now()
    patch = recorded(outcome)
    async with db.write() as conn:
        await db.lock_key(conn, STARTUP_LOCK)
        open_turns = scope.pick(
            [to_turn(row) for row in await conn.execute(_OPEN_TURNS)], lambda t: t.session_id
        )
        await db.lock_sessions(conn, sorted({t.session_id for t in open_turns}))
        done = [
            Turn(
                id=t.id,
                session_id=t.session_id,
                task_id=t.task_id,
                started_at=t.started_at,
                completed_at=now,
                metadata={**t.metadata, **patch},
                created_at=t.created_at,
                updated_at=now,
            )
            for t in open_turns
        ]
        if done:
            await conn.execute(
                _COMPLETE_TURN,
                [
                    {
                        "turn_id": t.id,
                        "new_completed_at": now,
                        "new_updated_at": now,
                        "new_metadata": dict(t.metadata),
                    }
                    for t in done
                ],
            )
    return done
