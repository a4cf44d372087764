"""Pending-action projections derived from the repository rule. Store-internal.

Each read first resolves the current turn of every session it looks at (once per session),
then looks only at the rows of those turns, through the turn index: the cost depends on the
current turns' rows, not on the length of the sessions' histories.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, select

from clarion.domain.models import MessageType, MetaKey, PendingAction
from clarion.store.db.fastpath import hot
from clarion.store.db.predicates import (
    PENDING_STATUSES,
    TERMINAL_STATES,
    clarification_rows,
    current_turns,
    not_parent_question,
    status_pending,
)
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx

# Bound parameters per IN list: far below every driver's limit.
CHUNK = 500

_LIVE = task_sessions.c.state.not_in(TERMINAL_STATES)
_CURRENT_OF_IDS = hot(
    current_turns(task_sessions.c.id.in_(bindparam("ids", expanding=True)) & _LIVE)
)
CURRENT_OF_TASK = current_turns((task_sessions.c.task_id == bindparam("task_id")) & _LIVE).order_by(
    task_sessions.c.created_at, task_sessions.c.id
)
_PENDING_IN_TURNS = hot(
    select(messages.c.task_session_id, messages.c.turn_id)
    .distinct()
    .where(
        messages.c.turn_id.in_(bindparam("turn_ids", expanding=True)),
        clarification_rows(),
        status_pending(),
    )
)
# Every permission request of the given turns (a turn holds few); the newest one per turn
# decides. Found through ix_messages_turn_type_order.
PERMISSIONS_IN_TURNS = hot(
    select(
        messages.c.task_session_id,
        messages.c.turn_id,
        messages.c.id,
        messages.c.created_at,
        messages.c.metadata,
    ).where(
        messages.c.turn_id.in_(bindparam("turn_ids", expanding=True)),
        messages.c.type == MessageType.PERMISSION_REQUEST.value,
        not_parent_question(),
    )
)


def chunks(values: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start : start + CHUNK])


async def live_current_turns(conn: Tx, session_ids: Sequence[str]) -> dict[str, str]:
    """Current turn id per non-terminal session among `session_ids` (sessions without a
    current turn are left out)."""
    found: dict[str, str] = {}
    for part in chunks(session_ids):
        for session_id, turn_id in await conn.execute(_CURRENT_OF_IDS, {"ids": part}):
            if turn_id is not None:
                found[str(session_id)] = str(turn_id)
    return found


async def sessions_with_pending(conn: Tx, current: dict[str, str]) -> set[str]:
    """Sessions with a pending clarification row in their current turn (`current`: session
    id -> current turn id)."""
    found: set[str] = set()
    for part in chunks(list(current.values())):
        for session_id, turn_id in await conn.execute(_PENDING_IN_TURNS, {"turn_ids": part}):
            # A row counts only in its own session's current turn.
            if current.get(str(session_id)) == turn_id:
                found.add(str(session_id))
    return found


async def sessions_with_pending_permission(conn: Tx, current: dict[str, str]) -> set[str]:
    """Sessions whose newest permission request in their current turn is still pending (the
    older ones are history), with one statement per chunk of sessions."""
    newest: dict[str, tuple[tuple[Any, str], Mapping[str, Any]]] = {}
    for part in chunks(list(current.values())):
        for row in await conn.execute(PERMISSIONS_IN_TURNS, {"turn_ids": part}):
            session_id = str(row.task_session_id)
            # A row counts only in its own session's current turn.
            if current.get(session_id) != row.turn_id:
                continue
            order = (row.created_at, str(row.id))
            if session_id not in newest or order > newest[session_id][0]:
                newest[session_id] = (order, row.metadata)
    return {
        session_id
        for session_id, (_, metadata) in newest.items()
        if (metadata.get(MetaKey.STATUS) or "") in PENDING_STATUSES
    }


async def read_pending_actions(
    conn: Tx, session_ids: Sequence[str]
) -> dict[str, PendingAction | None]:
    """`Store.pending_actions` inside an open transaction."""
    wanted = list(dict.fromkeys(session_ids))
    if not wanted:
        return {}
    return await pending_actions_of(conn, wanted, await live_current_turns(conn, wanted))


async def pending_actions_of(
    conn: Tx, wanted: Sequence[str], current: dict[str, str]
) -> dict[str, PendingAction | None]:
    """The pending action of each of `wanted`, given their live current turns (`current`)."""
    result: dict[str, PendingAction | None] = dict.fromkeys(wanted)
    clarifying = await sessions_with_pending(conn, current) if current else set()
    others = {s: t for s, t in current.items() if s not in clarifying}
    permitting = await sessions_with_pending_permission(conn, others) if others else set()
    for session_id in current:
        if session_id in clarifying:
            result[session_id] = PendingAction.CLARIFICATION
        elif session_id in permitting:
            result[session_id] = PendingAction.PERMISSION
    return result
