"""Reconciling delivery intents that no reservation owns: an answer claimed for a hand-off
that never finished. The claim is restored when every row is still its session's current
question, otherwise the intent is retired and the rows stay terminal history: the domain
decides which (domain/unsettled_claims.py), this module applies the named transition."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime

from clarion.domain.lifecycle import ACTIVE, RESTORE_CLAIM, RETIRE_INTENT, Transition
from clarion.domain.models import Message, MetaKey
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.domain.unsettled_claims import settle_unfinished_claim
from clarion.ports import Clock, IntentRecovery
from clarion.store.bundle_rows import rewrite, run_rows, select_rows
from clarion.store.bundle_transitions import also_writes
from clarion.store.db.engine import Db
from clarion.store.db.transactions import Tx
from clarion.store.startup.recovery_sql import (
    CLAIMED_ROWS,
    STARTUP_LOCK,
    STILL_CURRENT,
    reserved_turns,
)


async def _restore_or_retire(conn: Tx, rows: list[Message], now: datetime) -> bool:
    """Restore the claim if every row is still current in a live session; otherwise retire
    the intent and keep the terminal history. Returns whether it restored."""
    ids = [m.id for m in rows]
    current = await run_rows(conn, STILL_CURRENT, {"message_ids": ids})
    # No reservation owns these rows: no successor was kept, nothing reached the agent.
    outcome = settle_unfinished_claim(
        successor_kept=False,
        agent_referenced_successor=False,
        still_current=bool(rows) and len(current) == len(rows),
    )
    settle = _SETTLES.get(outcome)
    if settle is None:  # pragma: no cover - without a kept successor it is one of the two
        raise ValueError(f"{outcome} does not settle an intent no reservation owns")
    await settle(conn, rows, now)
    return bool(outcome.targets & ACTIVE)  # restored: answerable again


async def _restore(conn: Tx, rows: list[Message], now: datetime) -> None:
    await rewrite(conn, rows, RESTORE_CLAIM, now=now)
    await also_writes(conn, RESTORE_CLAIM, rows, now)


async def _retire(conn: Tx, rows: list[Message], now: datetime) -> None:
    await rewrite(conn, rows, RETIRE_INTENT)


# How each outcome the domain may decide for an intent no reservation owns is written.
_SETTLES: Mapping[Transition, Callable[[Tx, list[Message], datetime], Awaitable[None]]] = {
    RESTORE_CLAIM: _restore,
    RETIRE_INTENT: _retire,
}


async def reconcile_intents(
    db: Db, clock: Clock, *, scope: SessionScope = EVERY_SESSION
) -> list[IntentRecovery]:
    decisions: list[IntentRecovery] = []
    async with db.write() as conn:
        await db.lock_key(conn, STARTUP_LOCK)
        # Rows a reservation names are that reservation's to settle, not this step's.
        owned: set[str] = set()
        for turn in await reserved_turns(conn):
            ids = turn.metadata.get(MetaKey.PROMPT_DISPATCH_MESSAGE_IDS)
            if isinstance(ids, list):
                owned.update(i for i in ids if isinstance(i, str))
        bundles: dict[str, list[Message]] = defaultdict(list)
        intents = await select_rows(conn, CLAIMED_ROWS)
        for row in scope.pick(intents, lambda r: r.session_id):
            if row.id not in owned:
                bundles[str(row.metadata.get(MetaKey.PENDING_ID, ""))].append(row)
        await db.lock_sessions(conn, [r.session_id for rows in bundles.values() for r in rows])
        now = clock.now()
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
