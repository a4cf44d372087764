"""Questions left without their waiter: at startup no waiter survives, so every pending
question of a live session's current turn is detached (kept answerable; an answer then
resumes the agent with a new prompt)."""

from __future__ import annotations

import functools
import logging
from collections import Counter
from typing import Any

from sqlalchemy import bindparam, tuple_, update

from clarion.domain.lifecycle import DETACH
from clarion.domain.notification_events import (
    CLARIFICATION_DETACHED,
    NotificationFact,
    questions_of_rows,
)
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.ports import ChangedBundle, Clock
from clarion.store.bundle_rows import bundle_rows, change_in_sql
from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import UtcDateTime
from clarion.store.db.predicates import current_turns
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.lifecycle_guards import guard
from clarion.store.outbox import OutboxWriter
from clarion.store.pending_actions import CHUNK
from clarion.store.startup.recovery_sql import LIVE_SESSION, STARTUP_LOCK

log = logging.getLogger(__name__)

# One statement per chunk both finds and flags the rows DETACH's guard matches (a row
# already detached is not detached again): each row's metadata is parsed once. A row counts
# only in its own session's current turn, hence the (session, turn) pairs.
_DETACH_IN_CURRENT_TURNS = (
    update(messages)
    .where(
        # The turn ids alone find the rows by index; the pairs then check their sessions.
        messages.c.turn_id.in_(bindparam("turn_ids", expanding=True)),
        guard(
            DETACH,
            current=tuple_(messages.c.task_session_id, messages.c.turn_id).in_(
                bindparam("pairs", expanding=True)
            ),
        ),
    )
    .values(
        metadata=change_in_sql(DETACH),
        updated_at=bindparam("now", type_=UtcDateTime),
    )
    .returning(messages.c.task_session_id, messages.c.task_id, messages.c.pending_id)
)


def _detached_fact(
    task_id: str,
    session_id: str,
    pending_id: str,
    questions: tuple[dict[str, Any], ...],
    title: str,
) -> NotificationFact:
    return NotificationFact(
        CLARIFICATION_DETACHED,
        task_id,
        title,
        session_id,
        pending_id=pending_id,
        questions=questions,
        after_restart=True,
    )


async def detach_all_bundles(
    db: Db, clock: Clock, outbox: OutboxWriter, *, scope: SessionScope = EVERY_SESSION
) -> tuple[ChangedBundle, ...]:
    now = clock.now()
    async with db.write() as conn:
        await db.lock_key(conn, STARTUP_LOCK)
        current = {
            str(sid): str(tid)
            for sid, tid in await conn.execute(current_turns(LIVE_SESSION))
            if tid is not None and scope.covers(str(sid))
        }
        await db.lock_sessions(conn, sorted(current))
        pairs = sorted(current.items())
        bundles: Counter[tuple[str, str, str]] = Counter()
        for start in range(0, len(pairs), CHUNK):
            part = pairs[start : start + CHUNK]
            result = await conn.execute(
                _DETACH_IN_CURRENT_TURNS,
                {"turn_ids": [turn for _, turn in part], "pairs": part, "now": now},
            )
            for session_id, task_id, pending_id in result:
                bundles[(session_id, pending_id or "", task_id)] += 1
        wanted = outbox.wants(CLARIFICATION_DETACHED)
        for session_id, pending_id, task_id in sorted(bundles) if wanted else ():
            questions = questions_of_rows(await bundle_rows(conn, pending_id))
            await outbox.enqueue(
                conn,
                CLARIFICATION_DETACHED,
                task_id,
                functools.partial(_detached_fact, task_id, session_id, pending_id, questions),
                now,
            )
    rows = sum(bundles.values())
    if rows:
        log.info(
            "clarification bundles detached at startup",
            extra={"rows": rows, "pending_ids": len(bundles)},
        )
    return tuple(
        ChangedBundle(session_id=sid, task_id=tid, pending_id=pid, rows=n)
        for (sid, pid, tid), n in sorted(bundles.items())
    )
