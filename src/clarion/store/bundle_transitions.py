"""The guarded write of a bundle's transitions: one bundle's (`apply_to_bundle`) and a
session's current-turn bundles' (`apply_to_session`). Store-internal: `SqlAnswers` hands on
the transition its caller named.

Each takes the session's lock, selects by the transition's guard (derived from the table:
store/lifecycle_guards.py) exactly the rows it may act on, applies it to those and returns
them (none: it did not apply, nothing written). Which transitions each call applies, and what
else a transition does in the same commit, are the registries below, keyed by transition.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.sql.elements import BindParameter

from clarion.domain.lifecycle import (
    CANCEL,
    CLAIM_RESEND,
    CLAIMED,
    DELIVER,
    DETACH,
    EXPIRE,
    FINISH_RESEND,
    MARK_UNREAD,
    RELEASE_RESEND,
    RESTORE_CLAIM,
    RETIRE_INTENT,
    Transition,
)
from clarion.domain.models import Message, SessionState
from clarion.domain.notification_events import CLARIFICATION_DETACHED
from clarion.ports import Clock, Written
from clarion.store.answer_statements import detached_fact, pending_id_of
from clarion.store.bundle_rows import lock_bundle_session, rewrite, run_rows
from clarion.store.db.engine import Db
from clarion.store.db.fastpath import hot
from clarion.store.db.predicates import in_current_turn
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.transactions import Tx
from clarion.store.deadline_rows import reopen_restored_expiry
from clarion.store.lifecycle_guards import guard
from clarion.store.outbox import OutboxWriter
from clarion.store.tasks import move_with

log = logging.getLogger(__name__)

# The transitions of one bundle `SqlAnswers.transition_bundle` applies, of which those that
# settle a claim `confirm_delivery` applies; those of a session's bundles at once.
ONE_BUNDLE = frozenset(
    {
        RESTORE_CLAIM,
        DELIVER,
        RETIRE_INTENT,
        CANCEL,
        MARK_UNREAD,
        CLAIM_RESEND,
        RELEASE_RESEND,
        FINISH_RESEND,
    }
)
SETTLES_A_CLAIM = frozenset({DELIVER, RETIRE_INTENT})
OF_A_SESSION = frozenset({DETACH, EXPIRE})


def names_its_rows(transition: Transition) -> bool:
    """A transition that leaves only the claimed state acts on one claim's rows, which its
    caller names: all of them still claimed, or none."""
    return transition.sources == frozenset({CLAIMED})


# Built once per transition with bind parameters (compiled once per dialect, fastpath.py).
_SESSION: BindParameter[str] = bindparam("session_id")
_PENDING_ID: BindParameter[str] = bindparam("pending_id")
_IDS: BindParameter[list[str]] = bindparam("message_ids", expanding=True)
_ITS_TURN = in_current_turn(session_id=_SESSION)


def _of_bundle(transition: Transition) -> Select[Any]:
    query = select(messages).where(
        guard(transition, current=_ITS_TURN), messages.c.pending_id == _PENDING_ID
    )
    return query.where(messages.c.id.in_(_IDS)) if names_its_rows(transition) else query


_OF_BUNDLE: Mapping[Transition, Select[Any]] = {t: hot(_of_bundle(t)) for t in ONE_BUNDLE}
_OF_SESSION: Mapping[Transition, Select[Any]] = {
    t: hot(select(messages).where(guard(t, current=_ITS_TURN))) for t in OF_A_SESSION
}
# The session transitions that may also act on one of its bundles alone.
_OF_SESSION_BUNDLE: Mapping[Transition, Select[Any]] = {
    DETACH: hot(_OF_SESSION[DETACH].where(messages.c.pending_id == _PENDING_ID))
}


def rows_of_bundle(transition: Transition) -> Select[Any]:
    """The statement selecting the rows of bundle `pending_id` (of session `session_id`;
    `message_ids`, when the transition names its rows) that `transition` applies to."""
    return _OF_BUNDLE[transition]


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


async def _reopen_expiry(conn: Tx, rows: Sequence[Message], now: datetime) -> None:
    await reopen_restored_expiry(conn, rows, now)


# What a transition also writes in the same commit: a restored claim reopens its question's
# fired expiry.
_ALSO: Mapping[Transition, Callable[[Tx, Sequence[Message], datetime], Awaitable[None]]] = {
    RESTORE_CLAIM: _reopen_expiry,
}


async def also_writes(
    conn: Tx, transition: Transition, rows: Sequence[Message], now: datetime
) -> None:
    """What `transition`, applied to `rows`, also writes in the same commit (`_ALSO`)."""
    also = _ALSO.get(transition)
    if also is not None and rows:
        await also(conn, rows, now)


# What a session's transition announces in the same commit: a detached bundle, once.
_ANNOUNCES: Mapping[
    Transition, Callable[[OutboxWriter, Tx, Sequence[Message], datetime], Awaitable[None]]
] = {DETACH: _announce_detached}


async def apply_to_bundle(
    db: Db,
    clock: Clock,
    pending_id: str,
    transition: Transition,
    *,
    message_ids: Sequence[str] | None = None,
    values: Mapping[str, Any] | None = None,
    to: SessionState | None = None,
) -> Written | None:
    """`transition` (one of ONE_BUNDLE) on the rows of bundle `pending_id` its guard matches
    (of `message_ids` when it names its rows); with `to`, the session moves in the same
    commit. None when it did not apply."""
    named = names_its_rows(transition)
    wanted = sorted(set(message_ids or ()))
    async with db.write() as conn:
        if named and not wanted:
            return None
        session_id = await lock_bundle_session(db, conn, pending_id)
        if session_id is None:
            return None
        params: dict[str, Any] = {"pending_id": pending_id, "session_id": session_id}
        if named:
            params["message_ids"] = wanted
        rows = await run_rows(conn, _OF_BUNDLE[transition], params)
        if not rows or (named and len(rows) != len(wanted)):
            return None
        now = clock.now()
        changed = await rewrite(conn, rows, transition, now=now, values=values)
        await also_writes(conn, transition, rows, now)
        session = await move_with(conn, session_id, to, now)
    log.info(
        "clarification bundle transition applied",
        extra={
            "pending_id": pending_id,
            "session_id": session_id,
            "transition": str(transition),
            "rows": len(changed),
        },
    )
    return Written(changed, session)


async def apply_to_session(
    db: Db,
    clock: Clock,
    outbox: OutboxWriter,
    session_id: str,
    transition: Transition,
    pending_id: str | None,
) -> tuple[Message, ...]:
    """`transition` (one of OF_A_SESSION) on the session's current-turn rows its guard
    matches (or one bundle's); DETACH also announces each bundle that changed."""
    if pending_id is None:
        query, params = _OF_SESSION[transition], {"session_id": session_id}
    elif transition in _OF_SESSION_BUNDLE:
        query = _OF_SESSION_BUNDLE[transition]
        params = {"session_id": session_id, "pending_id": pending_id}
    else:
        raise ValueError(f"{transition} acts on a whole session's bundles, not one bundle")
    async with db.write() as conn:
        await db.lock_session(conn, session_id)
        rows = await run_rows(conn, query, params)
        now = clock.now()
        changed = await rewrite(conn, rows, transition, now=now)
        announce = _ANNOUNCES.get(transition)
        if announce is not None:
            await announce(outbox, conn, changed, now)
    if changed:
        log.info(
            "clarification bundles changed",
            extra={
                "session_id": session_id,
                "transition": str(transition),
                "pending_ids": sorted({pending_id_of(m) for m in changed}),
            },
        )
    return changed
