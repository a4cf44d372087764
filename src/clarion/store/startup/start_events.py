"""The start-event outbox: a kept reservation's turn carries a marker until its start event
has been published, so a crash between the two replays the event instead of losing it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, select, update

from clarion.domain.models import MetaKey, Turn
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.store.db.portable_sql import flag
from clarion.store.db.row_conversion import StoreBase, to_turn
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.pending_actions import chunks
from clarion.store.startup.recovery_sql import SET_TURN_METADATA
from clarion.store.turns import read_turn

START_EVENT = MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING


def _without_marker(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k != START_EVENT}


_TURNS_AMONG = select(turns).where(turns.c.id.in_(bindparam("ids", expanding=True)))


class StartEventQueries(StoreBase):
    async def list_outbox_turns(self, *, scope: SessionScope = EVERY_SESSION) -> list[Turn]:
        query = (
            select(turns)
            .where(flag(turns.c.metadata, START_EVENT))
            .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
        )
        async with self._db.read() as conn:
            turns_found = [to_turn(row) for row in await conn.execute(query)]
        return scope.pick(turns_found, lambda t: t.session_id)

    async def clear_outbox(self, turn_id: str) -> bool:
        async with self._db.write() as conn:
            turn = await read_turn(conn, turn_id)
            if turn is None:
                return False
            await self._db.lock_session(conn, turn.session_id)
            turn = await read_turn(conn, turn_id)
            if turn is None or START_EVENT not in turn.metadata:
                return False
            await conn.execute(
                update(turns)
                .where(turns.c.id == turn_id)
                .values(
                    metadata=_without_marker(turn.metadata),
                    updated_at=self._clock.now(),
                )
            )
        return True

    async def clear_outboxes(self, turn_ids: Sequence[str]) -> list[str]:
        wanted = sorted(set(turn_ids))
        cleared: list[dict[str, Any]] = []
        now = self._clock.now()
        async with self._db.write() as conn:
            found: list[Turn] = []
            for part in chunks(wanted):
                found.extend(to_turn(r) for r in await conn.execute(_TURNS_AMONG, {"ids": part}))
            await self._db.lock_sessions(conn, [t.session_id for t in found])
            for turn in found:
                if START_EVENT in turn.metadata:
                    cleared.append(
                        {
                            "turn_id": turn.id,
                            "new_metadata": _without_marker(turn.metadata),
                            "new_updated_at": now,
                        }
                    )
            if cleared:
                await conn.execute(SET_TURN_METADATA, cleared)
        return [c["turn_id"] for c in cleared]
