"""What a claim reads under its session's lock, in one statement: the session with its current
turn, and the bundle's rows (parent questions aside), each with whether the claim may take it.
Store-internal; `answer_statements.claim_response` is its user.

Under the session lock nothing of this can change between statements, so reading it as one
gives what the rows, the claimable rows and the session read as three statements gave, for one
round trip. The session is the statement's anchor and the rows are left-joined to it, so the
session comes back even when the pending id names only parent questions. The rows are joined by
pending id alone, as a bundle's rows are read everywhere: a malformed bundle's rows in another
session come back too, and the claim refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, and_, bindparam, select
from sqlalchemy.sql.elements import BindParameter

from clarion.domain.lifecycle import CLAIM, CLAIM_BY_POLICY, Transition
from clarion.domain.models import Message, Session
from clarion.store.bundle_rows import bundle_order
from clarion.store.db.fastpath import hot
from clarion.store.db.predicates import current_turn_id, in_current_turn, not_parent_question
from clarion.store.db.row_conversion import (
    prefixed_session_columns,
    to_message,
    to_prefixed_session,
)
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx
from clarion.store.lifecycle_guards import guard

_SESSION: BindParameter[str] = bindparam("session_id")
_PENDING_ID: BindParameter[str] = bindparam("pending_id")
# What each claim reads: its guard (derived from the table) says which rows it may take.
CLAIMS = (CLAIM, CLAIM_BY_POLICY)


def _claim_read(claim: Transition) -> Select[Any]:
    return (
        select(
            *prefixed_session_columns(),
            current_turn_id(_SESSION).label("current_turn_id"),
            messages,
            guard(claim, current=in_current_turn(session_id=_SESSION)).label("claimable"),
        )
        .select_from(
            task_sessions.outerjoin(
                messages, and_(messages.c.pending_id == _PENDING_ID, not_parent_question())
            )
        )
        .where(task_sessions.c.id == _SESSION)
    )


_CLAIM_READ: Mapping[Transition, Select[Any]] = {c: hot(_claim_read(c)) for c in CLAIMS}


@dataclass(frozen=True, slots=True)
class ClaimRead:
    session: Session
    current_turn_id: str | None
    rows: list[Message]  # the bundle's rows, in bundle order
    claimable: list[Message]  # those a claim may take, in bundle order


async def read_claim(
    conn: Tx, pending_id: str, session_id: str, claim: Transition
) -> ClaimRead | None:
    """What `claim` (one of CLAIMS) reads; None when the session is gone (its lock is held,
    so only if it never existed)."""
    found = list(
        await conn.execute(_CLAIM_READ[claim], {"pending_id": pending_id, "session_id": session_id})
    )
    if not found:
        return None
    first = found[0]
    present = [row for row in found if row.id is not None]
    rows = sorted((to_message(row) for row in present), key=bundle_order)
    taken = {str(row.id) for row in present if row.claimable}
    current = first.current_turn_id
    return ClaimRead(
        session=to_prefixed_session(first),
        current_turn_id=None if current is None else str(current),
        rows=rows,
        claimable=[row for row in rows if row.id in taken],
    )
