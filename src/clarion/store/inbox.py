"""The inbox candidates: what the pending-action rule says a person owes, item by item.

Store-internal. The same rule as `pending_actions` (projections.py), but instead of
one verdict per session it names each item: every bundle with a pending clarification row in its
session's current turn, and the newest permission request of a current turn while it is still
pending. Non-terminal sessions of the given workspaces only, and, for a user a waiting policy
escalated questions to, those questions (nothing else of their sessions or workspaces).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select

from clarion.domain.models import AuthorType, MessageType, MetaKey
from clarion.ports import InboxEntry
from clarion.store.db.predicates import (
    PENDING_STATUSES,
    TERMINAL_STATES,
    clarification_rows,
    current_turns,
    status_pending,
)
from clarion.store.db.schema import clarification_deadlines as deadlines
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_sessions, tasks
from clarion.store.db.transactions import Tx
from clarion.store.pending_actions import PERMISSIONS_IN_TURNS, chunks

_CLARIFICATIONS_IN_TURNS = select(
    messages.c.pending_id,
    messages.c.task_session_id,
    messages.c.turn_id,
    messages.c.created_at,
).where(
    messages.c.turn_id.in_(bindparam("turn_ids", expanding=True)),
    clarification_rows(),
    status_pending(),
)
_TITLES = select(tasks.c.id, tasks.c.title, tasks.c.description).where(
    tasks.c.id.in_(bindparam("ids", expanding=True))
)
_LAST_AGENT_MESSAGE = (
    select(messages.c.content)
    .where(
        messages.c.task_session_id == bindparam("session_id"),
        messages.c.author_type == AuthorType.AGENT.value,
        messages.c.type == MessageType.MESSAGE.value,
    )
    .order_by(messages.c.created_at.desc(), messages.c.id.desc())
    .limit(1)
)
# A long reply is cut: the inbox line gives the thread, the session has the whole text.
LAST_MESSAGE_CHARS = 600


async def _last_agent_messages(conn: Tx, session_ids: set[str]) -> dict[str, str]:
    said: dict[str, str] = {}
    for session_id in sorted(session_ids):
        content = (await conn.execute(_LAST_AGENT_MESSAGE, {"session_id": session_id})).scalar()
        if content:
            text = str(content)
            said[session_id] = (
                text if len(text) <= LAST_MESSAGE_CHARS else text[:LAST_MESSAGE_CHARS] + "…"
            )
    return said


# Escalated questions of live sessions whose expiry has not answered them; the current-turn
# rule below drops those a person answered.
_ESCALATED = (
    select(deadlines.c.pending_id, deadlines.c.session_id, deadlines.c.escalate_to)
    .join(task_sessions, task_sessions.c.id == deadlines.c.session_id)
    .where(
        deadlines.c.escalated_at.is_not(None),
        deadlines.c.expired_at.is_(None),
        task_sessions.c.state.not_in(TERMINAL_STATES),
    )
)


def _live_sessions(
    workspace_ids: Sequence[str] | None, session_ids: Sequence[str] | None = None
) -> Any:
    live: Any = task_sessions.c.state.not_in(TERMINAL_STATES)
    if session_ids is not None:
        live = live & task_sessions.c.id.in_(list(session_ids))
    if workspace_ids is None:
        return current_turns(live)
    visible = select(tasks.c.id).where(tasks.c.workspace_id.in_(list(workspace_ids)))
    return current_turns(live & task_sessions.c.task_id.in_(visible))


async def _current(
    conn: Tx, workspace_ids: Sequence[str] | None, session_ids: Sequence[str] | None = None
) -> dict[str, tuple[str, str]]:
    """session id -> (current turn id, task id) of every live visible session."""
    query = _live_sessions(workspace_ids, session_ids).add_columns(task_sessions.c.task_id)
    return {
        str(session_id): (str(turn_id), str(task_id))
        for session_id, turn_id, task_id in await conn.execute(query)
        if turn_id is not None
    }


async def read_escalated(conn: Tx, user: str) -> list[InboxEntry]:
    """The still-open questions a waiting policy escalated to `user`, whatever their workspace."""
    escalated: dict[str, str] = {}
    for pending_id, session_id, escalate_to in await conn.execute(_ESCALATED):
        users = escalate_to.get("users", []) if isinstance(escalate_to, dict) else []
        if user in users:
            escalated[str(pending_id)] = str(session_id)
    if not escalated:
        return []
    entries = await read_inbox(conn, None, sorted(set(escalated.values())))
    return [e for e in entries if e.kind == "clarification" and e.id in escalated]


async def read_inbox(
    conn: Tx, workspace_ids: Sequence[str] | None, session_ids: Sequence[str] | None = None
) -> list[InboxEntry]:
    if workspace_ids is not None and not workspace_ids:
        return []
    current = await _current(conn, workspace_ids, session_ids)
    turns = [turn for turn, _ in current.values()]
    # pending id -> (session id, oldest row's created_at)
    bundles: dict[str, tuple[str, datetime]] = {}
    newest: dict[str, tuple[tuple[datetime, str], Any]] = {}
    for part in chunks(turns):
        for row in await conn.execute(_CLARIFICATIONS_IN_TURNS, {"turn_ids": part}):
            session_id = str(row.task_session_id)
            # A row counts only in its own session's current turn.
            if current.get(session_id, ("",))[0] != row.turn_id:
                continue
            seen = bundles.get(row.pending_id)
            if seen is None or row.created_at < seen[1]:
                bundles[str(row.pending_id)] = (session_id, row.created_at)
        for row in await conn.execute(PERMISSIONS_IN_TURNS, {"turn_ids": part}):
            session_id = str(row.task_session_id)
            if current.get(session_id, ("",))[0] != row.turn_id:
                continue
            order = (row.created_at, str(row.id))
            if session_id not in newest or order > newest[session_id][0]:
                newest[session_id] = (order, row.metadata)
    entries = [
        InboxEntry("clarification", pid, session_id, current[session_id][1], "", created_at)
        for pid, (session_id, created_at) in bundles.items()
    ]
    entries.extend(
        InboxEntry(
            "permission", message_id, session_id, current[session_id][1], "", created_at, metadata
        )
        for session_id, ((created_at, message_id), metadata) in newest.items()
        if (metadata.get(MetaKey.STATUS) or "") in PENDING_STATUSES
    )
    titles: dict[str, tuple[str, str]] = {}
    for part in chunks(sorted({e.task_id for e in entries})):
        rows = await conn.execute(_TITLES, {"ids": part})
        titles.update((str(i), (str(t), str(d or ""))) for i, t, d in rows)
    said = await _last_agent_messages(conn, {e.session_id for e in entries})
    entries = [
        replace(
            e,
            task_title=titles.get(e.task_id, ("", ""))[0],
            task_description=titles.get(e.task_id, ("", ""))[1],
            last_agent_message=said.get(e.session_id),
        )
        for e in entries
    ]
    entries.sort(key=lambda e: (e.created_at, e.id))
    return entries
