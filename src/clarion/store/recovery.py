"""Startup queries: reservations, delivery intents, the start-event outbox, detachable bundles.

Imported only by the SqlStore facade. Each reconciliation is one write transaction and only
acts on rows still carrying the markers it retires, so running it twice is harmless.
Reservation metadata is validated for every reservation before the first write: a malformed
one raises CorruptReservationError and leaves everything (that row included) as it was.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, not_, select, update

from clarion.domain.models import Message, MetaKey, Turn
from clarion.ports import IntentRecovery, ReservationRecovery
from clarion.store.bundles import (
    drop_keys,
    restore_pending,
    rewrite,
    run_rows,
    select_rows,
)
from clarion.store.predicates import (
    TERMINAL_STATES,
    clarification_rows,
    current_turns,
    status_pending,
)
from clarion.store.projections import chunks
from clarion.store.reservation_recovery import (
    SET_TURN_METADATA,
    STILL_CURRENT,
    CorruptReservationError,
    plan,
    reconcile_plans,
)
from clarion.store.rows import StoreBase, to_turn
from clarion.store.schema import task_session_messages as messages
from clarion.store.schema import task_session_turns as turns
from clarion.store.schema import task_sessions
from clarion.store.sql import flag
from clarion.store.turns import read_turn
from clarion.store.tx import Tx

__all__ = ["CorruptReservationError", "RecoveryQueries"]

_TURNS_AMONG = select(turns).where(turns.c.id.in_(bindparam("ids", expanding=True)))
_LIVE = task_sessions.c.state.not_in(TERMINAL_STATES)
INTENT = MetaKey.RESPONSE_DELIVERY_PENDING


async def _reservations(conn: Tx) -> list[Turn]:
    query = (
        select(turns)
        .where(flag(turns.c.metadata, MetaKey.PROMPT_DISPATCH_PENDING))
        .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
    )
    return [to_turn(row) for row in await conn.execute(query)]


async def _restore_or_retire(conn: Tx, rows: list[Message], now: Any) -> bool:
    """Restore the claim if every row is still current in a live session; otherwise retire
    the intent and keep the terminal history. Returns whether it restored."""
    ids = [m.id for m in rows]
    current = await run_rows(conn, STILL_CURRENT, {"message_ids": ids})
    if rows and len(current) == len(rows):
        await rewrite(conn, rows, restore_pending, now=now)
        return True
    await rewrite(conn, rows, drop_keys(INTENT), now=None)
    return False


class RecoveryQueries(StoreBase):
    async def reconcile_reservations(self) -> list[ReservationRecovery]:
        decisions: list[ReservationRecovery] = []
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "clarion-startup-recovery")
            plans = [plan(turn) for turn in await _reservations(conn)]
            await self._db.lock_sessions(conn, [p.turn.session_id for p in plans])
            decisions = await reconcile_plans(conn, plans, self._clock.now())
        return decisions

    async def reconcile_intents(self) -> list[IntentRecovery]:
        decisions: list[IntentRecovery] = []
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "clarion-startup-recovery")
            owned: set[str] = set()
            for turn in await _reservations(conn):
                ids = turn.metadata.get(MetaKey.PROMPT_DISPATCH_MESSAGE_IDS)
                if isinstance(ids, list):
                    owned.update(i for i in ids if isinstance(i, str))
            bundles: dict[str, list[Message]] = defaultdict(list)
            intents = await select_rows(
                conn, clarification_rows(), flag(messages.c.metadata, INTENT)
            )
            for row in intents:
                if row.id not in owned:
                    bundles[str(row.metadata.get(MetaKey.PENDING_ID, ""))].append(row)
            await self._db.lock_sessions(
                conn, [r.session_id for rows in bundles.values() for r in rows]
            )
            now = self._clock.now()
            for pending_id, rows in sorted(bundles.items()):
                restored = await _restore_or_retire(conn, rows, now)
                decisions.append(
                    IntentRecovery(
                        pending_id=pending_id,
                        session_id=rows[0].session_id,
                        restored=restored,
                        message_ids=tuple(r.id for r in rows),
                    )
                )
        return decisions

    async def list_outbox_turns(self) -> list[Turn]:
        query = (
            select(turns)
            .where(flag(turns.c.metadata, MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING))
            .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
        )
        async with self._db.read() as conn:
            return [to_turn(row) for row in await conn.execute(query)]

    async def clear_outbox(self, turn_id: str) -> bool:
        key = MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING
        async with self._db.write() as conn:
            turn = await read_turn(conn, turn_id)
            if turn is None:
                return False
            await self._db.lock_session(conn, turn.session_id)
            turn = await read_turn(conn, turn_id)
            if turn is None or key not in turn.metadata:
                return False
            await conn.execute(
                update(turns)
                .where(turns.c.id == turn_id)
                .values(metadata=drop_keys(key)(dict(turn.metadata)), updated_at=self._clock.now())
            )
        return True

    async def clear_outboxes(self, turn_ids: Sequence[str]) -> list[str]:
        key = MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING
        wanted = sorted(set(turn_ids))
        cleared: list[dict[str, Any]] = []
        now = self._clock.now()
        async with self._db.write() as conn:
            found: list[Turn] = []
            for part in chunks(wanted):
                found.extend(to_turn(r) for r in await conn.execute(_TURNS_AMONG, {"ids": part}))
            await self._db.lock_sessions(conn, [t.session_id for t in found])
            for turn in found:
                if key in turn.metadata:
                    cleared.append(
                        {
                            "turn_id": turn.id,
                            "new_metadata": drop_keys(key)(dict(turn.metadata)),
                            "new_updated_at": now,
                        }
                    )
            if cleared:
                await conn.execute(SET_TURN_METADATA, cleared)
        return [c["turn_id"] for c in cleared]

    async def list_detachable_bundles(self) -> list[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        async with self._db.read() as conn:
            current = {
                str(sid): str(tid)
                for sid, tid in await conn.execute(current_turns(_LIVE))
                if tid is not None
            }
            for part in chunks(list(current.values())):
                query = (
                    select(messages.c.task_session_id, messages.c.turn_id, messages.c.pending_id)
                    .distinct()
                    .where(
                        messages.c.turn_id.in_(part),
                        clarification_rows(),
                        status_pending(),
                        not_(flag(messages.c.metadata, MetaKey.AGENT_DISCONNECTED)),
                    )
                )
                for session_id, turn_id, pending_id in await conn.execute(query):
                    if current.get(str(session_id)) == turn_id:
                        found.add((str(session_id), str(pending_id)))
        return sorted(found)
