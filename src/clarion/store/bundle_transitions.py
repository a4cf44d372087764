"""The answer path's guarded write of each bundle transition: settling a claim (DELIVER,
RETIRE_INTENT), restoring it (RESTORE_CLAIM), detaching (DETACH), expiring (EXPIRE) and
cancelling (CANCEL). Store-internal: `SqlAnswers` picks the one its caller named.

Each takes the session's lock, selects by its guard exactly the rows the transition may act
on and returns the rows it changed (none: it did not apply, nothing written).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from datetime import datetime

from clarion.domain.lifecycle import CANCEL, DETACH, EXPIRE, RESTORE_CLAIM, Transition
from clarion.domain.models import Message, SessionState
from clarion.domain.webhooks import CLARIFICATION_DETACHED
from clarion.ports import Clock, Written
from clarion.store.answer_statements import (
    DETACHABLE,
    DETACHABLE_BUNDLE,
    PENDING_OF_BUNDLE,
    PENDING_OF_SESSION,
    RESTORABLE,
    SETTLES_A_CLAIM,
    WITH_INTENT,
    detached_fact,
    pending_id_of,
)
from clarion.store.bundle_rows import lock_bundle_session, rewrite, run_rows
from clarion.store.db.engine import Db
from clarion.store.db.transactions import Tx
from clarion.store.deadline_rows import reopen_restored_expiry
from clarion.store.outbox import OutboxWriter
from clarion.store.tasks import move_with

log = logging.getLogger(__name__)


async def settle(
    db: Db,
    clock: Clock,
    pending_id: str,
    ids: Sequence[str],
    transition: Transition,
    to: SessionState | None,
) -> Written | None:
    """DELIVER or RETIRE_INTENT on exactly these rows, all still carrying the intent; with
    `to`, the session moves in the same commit."""
    if transition not in SETTLES_A_CLAIM:
        raise ValueError(f"{transition} does not settle a claim")
    wanted = set(ids)
    async with db.write() as conn:
        if not wanted:
            return None
        session_id = await lock_bundle_session(db, conn, pending_id)
        if session_id is None:
            return None
        rows = await run_rows(
            conn, WITH_INTENT, {"message_ids": sorted(wanted), "pending_id": pending_id}
        )
        if len(rows) != len(wanted):
            return None
        confirmed = await rewrite(conn, rows, transition)
        session = await move_with(conn, session_id, to, clock.now())
    log.info("clarification delivery confirmed", extra={"pending_id": pending_id})
    return Written(confirmed, session)


async def restore(
    db: Db, clock: Clock, pending_id: str, message_ids: Sequence[str]
) -> tuple[Message, ...]:
    """RESTORE_CLAIM on these rows, still claimed in a current turn; a fired expiry reopens."""
    wanted = set(message_ids)
    async with db.write() as conn:
        if not wanted:
            return ()
        session_id = await lock_bundle_session(db, conn, pending_id)
        if session_id is None:
            return ()
        rows = await run_rows(
            conn,
            RESTORABLE,
            {"message_ids": sorted(wanted), "pending_id": pending_id, "session_id": session_id},
        )
        if len(rows) != len(wanted):
            return ()
        restored = await rewrite(conn, rows, RESTORE_CLAIM, now=clock.now())
        await reopen_restored_expiry(conn, rows, clock.now())
    log.info("clarification claim restored", extra={"pending_id": pending_id})
    return restored


async def detach(
    db: Db, clock: Clock, outbox: OutboxWriter, session_id: str, pending_id: str | None
) -> tuple[Message, ...]:
    """DETACH on the session's pending rows not yet detached (or one bundle's), with one
    `clarification.detached` per bundle that changed."""
    query, params = DETACHABLE, {"session_id": session_id}
    if pending_id is not None:
        query, params = DETACHABLE_BUNDLE, {**params, "pending_id": pending_id}
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        rows = await run_rows(conn, query, params)
        now = clock.now()
        changed = await rewrite(conn, rows, DETACH, now=now)
        await _announce_detached(outbox, conn, changed, now)
    if changed:
        log.info(
            "clarification bundles detached",
            extra={
                "session_id": session_id,
                "pending_ids": sorted({pending_id_of(m) for m in changed}),
            },
        )
    return changed


async def expire(db: Db, clock: Clock, session_id: str) -> tuple[Message, ...]:
    """EXPIRE on the session's pending rows, as the session ends."""
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        rows = await run_rows(conn, PENDING_OF_SESSION, {"session_id": session_id})
        changed = await rewrite(conn, rows, EXPIRE, now=clock.now())
    if changed:
        log.info("clarification bundles expired", extra={"session_id": session_id})
    return changed


async def cancel(db: Db, clock: Clock, pending_id: str) -> tuple[Message, ...]:
    """CANCEL on the bundle's pending rows in its session's current turn."""
    # Only operationally pending rows: superseded history is never rewritten.
    async with db.write() as conn:
        session_id = await lock_bundle_session(db, conn, pending_id)
        if session_id is None:
            return ()
        rows = await run_rows(
            conn, PENDING_OF_BUNDLE, {"pending_id": pending_id, "session_id": session_id}
        )
        changed = await rewrite(conn, rows, CANCEL, now=clock.now())
    if changed:
        log.info("clarification bundle cancelled", extra={"pending_id": pending_id})
    return changed


async def _announce_detached(
    outbox: OutboxWriter, conn: Tx, changed: Sequence[Message], now: datetime
) -> None:
    """One `clarification.detached` per bundle that changed, with all its pending rows."""
    by_bundle: dict[str, list[Message]] = {}
    for row in changed:
        by_bundle.setdefault(pending_id_of(row), []).append(row)
    for pending_id, rows in sorted(by_bundle.items()):
        first = rows[0]
        await outbox.enqueue(
            conn,
            CLARIFICATION_DETACHED,
            first.task_id,
            functools.partial(detached_fact, pending_id, rows),
            now,
        )
