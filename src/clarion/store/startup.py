"""Set-based startup steps: detach every orphaned bundle, interrupt every open turn, settle
session states, each as one transaction however many rows it touches.

Imported only by the SqlStore facade. Each step selects exactly the rows its one-at-a-time
counterpart would (`list_detachable_bundles` + `detach_bundles`, `list_open_turns` +
`complete_turn`, `transition_session`) and writes them with one batched statement
(executemany), so startup cost grows with the rows changed, not with round trips per row.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, not_, select, tuple_, update

from clarion.domain.models import MetaKey, SessionState, Turn
from clarion.domain.webhooks import CLARIFICATION_DETACHED, WebhookFact, questions_of_rows
from clarion.ports import DetachedBundle
from clarion.store.bundles import bundle_rows
from clarion.store.outbox import OutboxQueries
from clarion.store.predicates import (
    TERMINAL_STATES,
    authoritative,
    clarification_rows,
    current_turns,
    status_pending,
)
from clarion.store.projections import CHUNK, chunks
from clarion.store.rows import to_turn
from clarion.store.schema import task_session_messages as messages
from clarion.store.schema import task_session_turns as turns
from clarion.store.schema import task_sessions
from clarion.store.sql import JsonText, UtcDateTime, flag, with_flag
from clarion.store.tasks import NON_TERMINAL

log = logging.getLogger(__name__)

_LIVE = task_sessions.c.state.not_in(TERMINAL_STATES)
# One statement per chunk both finds and flags the rows: each row's metadata is parsed once.
# A row counts only in its own session's current turn, hence the (session, turn) pairs.
_DETACH_IN_CURRENT_TURNS = (
    update(messages)
    .where(
        # The turn ids alone find the rows by index; the pairs then check their sessions.
        messages.c.turn_id.in_(bindparam("turn_ids", expanding=True)),
        tuple_(messages.c.task_session_id, messages.c.turn_id).in_(
            bindparam("pairs", expanding=True)
        ),
        clarification_rows(),
        status_pending(),
        not_(flag(messages.c.metadata, MetaKey.AGENT_DISCONNECTED)),
    )
    .values(
        metadata=with_flag(messages.c.metadata, MetaKey.AGENT_DISCONNECTED),
        updated_at=bindparam("now", type_=UtcDateTime),
    )
    .returning(messages.c.task_session_id, messages.c.task_id, messages.c.pending_id)
)
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


def _detached_fact(
    task_id: str,
    session_id: str,
    pending_id: str,
    questions: tuple[dict[str, Any], ...],
    title: str,
) -> WebhookFact:
    return WebhookFact(
        CLARIFICATION_DETACHED,
        task_id,
        title,
        session_id,
        pending_id=pending_id,
        questions=questions,
    )


class StartupQueries(OutboxQueries):
    async def detach_all_bundles(self) -> tuple[DetachedBundle, ...]:
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "clarion-startup-recovery")
            current = {
                str(sid): str(tid)
                for sid, tid in await conn.execute(current_turns(_LIVE))
                if tid is not None
            }
            await self._db.lock_sessions(conn, sorted(current))
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
            wanted = self._outbox.urls_for(CLARIFICATION_DETACHED)
            for session_id, pending_id, task_id in sorted(bundles) if wanted else ():
                questions = questions_of_rows(await bundle_rows(conn, pending_id))
                await self._enqueue(
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
            DetachedBundle(session_id=sid, task_id=tid, pending_id=pid, rows=n)
            for (sid, pid, tid), n in sorted(bundles.items())
        )

    async def complete_open_turns(
        self, *, metadata_patch: Mapping[str, Any] | None = None
    ) -> list[Turn]:
        now = self._clock.now()
        patch = dict(metadata_patch or {})
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "clarion-startup-recovery")
            open_turns = [to_turn(row) for row in await conn.execute(_OPEN_TURNS)]
            await self._db.lock_sessions(conn, sorted({t.session_id for t in open_turns}))
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

    async def transition_sessions(
        self,
        session_ids: Sequence[str],
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> list[str]:
        allowed = [s.value for s in (NON_TERMINAL if allowed_from is None else allowed_from)]
        wanted = sorted(set(session_ids))
        moved: list[str] = []
        async with self._db.write() as conn:
            await self._db.lock_sessions(conn, wanted)
            for part in chunks(wanted):
                result = await conn.execute(
                    update(task_sessions)
                    .where(task_sessions.c.id.in_(part), task_sessions.c.state.in_(allowed))
                    .values(state=to.value, updated_at=self._clock.now())
                    .returning(task_sessions.c.id)
                )
                moved.extend(str(v) for v in result.scalars())
        return sorted(moved)
