"""Start markers: a kept reservation's turn carries a marker until its start event has been
published, so a crash between the two replays the event instead of losing it. (The contract
calls these turns the start-event outbox; "outbox" in the code is the notification outbox.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, select

from clarion.domain.models import MetaKey, Turn
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.ports import Clock
from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import flag
from clarion.store.db.row_conversion import to_turn
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.pending_actions import chunks
from clarion.store.startup.recovery_sql import SET_TURN_METADATA

START_EVENT = MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING


def without_marker(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k != START_EVENT}


_TURNS_AMONG = select(turns).where(turns.c.id.in_(bindparam("ids", expanding=True)))


async def list_start_marked_turns(db: Db, *, scope: SessionScope = EVERY_SESSION) -> list[Turn]:
    query = (
        select(turns)
        .where(flag(turns.c.metadata, START_EVENT))
        .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
    )
    async with db.read() as conn:
        turns_found = [to_turn(row) for row in await conn.execute(query)]
    return scope.pick(turns_found, lambda t: t.session_id)


async def clear_start_markers(db: Db, clock: Clock, turn_ids: Sequence[str]) -> list[str]:
    wanted = sorted(set(turn_ids))
    cleared: list[dict[str, Any]] = []
    now = clock.now()
    async with db.write() as conn:
        found: list[Turn] = []
        for part in chunks(wanted):
            found.extend(to_turn(r) for r in await conn.execute(_TURNS_AMONG, {"ids": part}))
        await db.lock_sessions(conn, [t.session_id for t in found])
        for turn in found:
            if START_EVENT in turn.metadata:
                cleared.append(
                    {
                        "turn_id": turn.id,
                        "new_metadata": without_marker(turn.metadata),
                        "new_updated_at": now,
                    }
                )
        if cleared:
            await conn.execute(SET_TURN_METADATA, cleared)
    return [c["turn_id"] for c in cleared]
