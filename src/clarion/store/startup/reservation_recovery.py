"""Reconciling unpublished successor reservations, as a batch.

A reservation whose agent may have had the prompt (the attempt marker is set, or the agent's
output already references the turn) is kept: the successor stays authoritative, the answer
terminal (`delivery` delivered or ambiguous) and its turn gets a start marker, so startup
replays its start event. Any other reservation is deleted and its claim restored, or retired
when the question is no longer current. Which reservation is kept and which transition
settles its claim are the domain's decisions (domain/unsettled_claims.py); this module finds
the facts and applies the named transitions. Reservation metadata is validated for every
reservation (`plan`) before the first write: a malformed one raises CorruptReservationError and
leaves everything (that row included) as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, select

from clarion.domain.flags import is_truthy as truthy
from clarion.domain.lifecycle import (
    DELIVER,
    DISPATCH_UNKNOWN,
    RESTORE_CLAIM,
    RETIRE_INTENT,
    Transition,
)
from clarion.domain.models import Message, MetaKey, Turn
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.domain.turns import public_metadata
from clarion.domain.unsettled_claims import settle_unfinished_claim, successor_is_kept
from clarion.ports import Clock, ReservationRecovery
from clarion.store.bundle_rows import bundle_order, rewrite_all, run_rows
from clarion.store.bundle_transitions import also_writes
from clarion.store.db.engine import Db
from clarion.store.db.row_conversion import to_message
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.transactions import Tx
from clarion.store.pending_actions import chunks
from clarion.store.startup.recovery_sql import (
    CLAIMED_ROWS,
    MESSAGE_IDS,
    SET_TURN_METADATA,
    STARTUP_LOCK,
    STILL_CURRENT,
    reserved_turns,
)


class CorruptReservationError(RuntimeError):
    """A reservation's recovery metadata is missing or malformed; nothing was changed."""

    def __init__(self, turn_id: str, reason: str) -> None:
        super().__init__(f"reservation {turn_id}: {reason}")
        self.turn_id = turn_id


@dataclass(frozen=True, slots=True)
class Plan:
    turn: Turn
    pending_id: str
    message_ids: tuple[str, ...]


def plan(turn: Turn) -> Plan:
    meta = turn.metadata
    pending_id = meta.get(MetaKey.PROMPT_DISPATCH_PENDING_ID)
    source = meta.get(MetaKey.PROMPT_DISPATCH_TURN_ID)
    ids = meta.get(MetaKey.PROMPT_DISPATCH_MESSAGE_IDS)
    if not isinstance(pending_id, str) or not pending_id:
        raise CorruptReservationError(turn.id, "missing or empty pending id")
    if not isinstance(source, str) or not source:
        raise CorruptReservationError(turn.id, "missing or empty clarification turn id")
    if not isinstance(ids, list) or not ids:
        raise CorruptReservationError(turn.id, "claimed message ids are not a non-empty list")
    if not all(isinstance(i, str) and i for i in ids):
        raise CorruptReservationError(turn.id, "a claimed message id is not a non-empty string")
    return Plan(turn=turn, pending_id=pending_id, message_ids=tuple(ids))


# Built once with bind parameters: startup runs them once per reservation or bundle.
_REFERENCED_AMONG = (
    select(messages.c.turn_id)
    .distinct()
    .where(messages.c.turn_id.in_(bindparam("turn_ids", expanding=True)))
)
_WITH_INTENT_AMONG = select(messages).where(messages.c.id.in_(MESSAGE_IDS), CLAIMED_ROWS)
_DELETE_TURN = delete(turns).where(turns.c.id == bindparam("turn_id"))


async def reconcile_plans(conn: Tx, plans: list[Plan], now: datetime) -> list[ReservationRecovery]:
    """Every plan's decision with a fixed number of statements. Processing them one by
    one would give the same result: reconciliation never changes a session's current
    turn (a deleted reservation was not authority, a kept one already was), and each
    claimed row loses its intent when a plan takes it, so a later plan naming the same
    row finds nothing, exactly as in sequence."""
    if not plans:
        return []
    turn_ids = [p.turn.id for p in plans]
    referenced_ids: set[str] = set()
    for part in chunks(turn_ids):
        result = await conn.execute(_REFERENCED_AMONG, {"turn_ids": part})
        referenced_ids.update(str(v) for v in result.scalars())
    wanted = sorted({i for p in plans for i in p.message_ids})
    # message id -> (row, its pending_id column, which claims match on)
    with_intent: dict[str, tuple[Message, str | None]] = {}
    for part in chunks(wanted):
        for row in await conn.execute(_WITH_INTENT_AMONG, {"message_ids": part}):
            with_intent[row.id] = (to_message(row), row.pending_id)
    decisions: list[ReservationRecovery] = []
    taken: list[tuple[Plan, bool, list[Message]]] = []
    for plan in plans:
        turn = plan.turn
        kept = successor_is_kept(
            attempted=truthy(turn.metadata.get(MetaKey.PROMPT_DISPATCH_ATTEMPTED)),
            referenced=turn.id in referenced_ids,
        )
        rows = [
            with_intent.pop(i)[0]
            for i in dict.fromkeys(plan.message_ids)
            if i in with_intent and with_intent[i][1] == plan.pending_id
        ]
        taken.append((plan, kept, sorted(rows, key=bundle_order)))
        decisions.append(
            ReservationRecovery(
                turn_id=turn.id,
                session_id=turn.session_id,
                pending_id=plan.pending_id,
                kept=kept,
                message_ids=plan.message_ids,
                ambiguous=kept and turn.id not in referenced_ids,
            )
        )
    restorable = [m.id for _, kept, rows in taken if not kept for m in rows]
    current: set[str] = set()
    for part in chunks(restorable):
        current.update(m.id for m in await run_rows(conn, STILL_CURRENT, {"message_ids": part}))
    # Each plan's claimed rows, by the transition the domain settles them with.
    settled: dict[Transition, list[Message]] = {
        t: [] for t in (DELIVER, DISPATCH_UNKNOWN, RESTORE_CLAIM, RETIRE_INTENT)
    }
    keep_turns: list[dict[str, Any]] = []
    drop_turns: list[dict[str, Any]] = []
    for plan, kept, rows in taken:
        outcome = settle_unfinished_claim(
            successor_kept=kept,
            agent_referenced_successor=plan.turn.id in referenced_ids,
            still_current=bool(rows) and all(m.id in current for m in rows),
        )
        settled[outcome].extend(rows)
        if kept:
            # Dispatch may have happened: the successor stays authoritative, the answer
            # stays terminal, and the start event is replayed from the start marker.
            meta = public_metadata(plan.turn.metadata)
            meta[MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING] = True
            keep_turns.append(
                {"turn_id": plan.turn.id, "new_metadata": meta, "new_updated_at": now}
            )
        else:
            drop_turns.append({"turn_id": plan.turn.id})
    if keep_turns:
        await conn.execute(SET_TURN_METADATA, keep_turns)
    if drop_turns:
        await conn.execute(_DELETE_TURN, drop_turns)
    await rewrite_all(conn, settled[RETIRE_INTENT], RETIRE_INTENT)
    await rewrite_all(conn, settled[DELIVER], DELIVER)
    await rewrite_all(conn, settled[DISPATCH_UNKNOWN], DISPATCH_UNKNOWN)
    await rewrite_all(conn, settled[RESTORE_CLAIM], RESTORE_CLAIM, now=now)
    await also_writes(conn, RESTORE_CLAIM, settled[RESTORE_CLAIM], now)
    return decisions


async def reconcile_reservations(
    db: Db, clock: Clock, *, scope: SessionScope = EVERY_SESSION
) -> list[ReservationRecovery]:
    async with db.write() as conn:
        await db.lock_key(conn, STARTUP_LOCK)
        # Out of scope first: a malformed reservation of another replica's session is not
        # this recovery's to refuse.
        reserved = scope.pick(await reserved_turns(conn), lambda t: t.session_id)
        plans = [plan(turn) for turn in reserved]
        await db.lock_sessions(conn, [p.turn.session_id for p in plans])
        return await reconcile_plans(conn, plans, clock.now())
