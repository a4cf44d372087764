"""Reading bundles and applying lifecycle transitions to their rows. Store-internal helpers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Executable, bindparam, select, update
from sqlalchemy.sql.elements import ColumnElement

from clarion.domain.lifecycle import Transition
from clarion.domain.models import Bundle, Message, MetaKey
from clarion.store.db.engine import Db
from clarion.store.db.fastpath import hot
from clarion.store.db.portable_sql import JsonText, UtcDateTime, with_flag
from clarion.store.db.predicates import current_turn_id, not_parent_question
from clarion.store.db.row_conversion import (
    prefixed_session_columns,
    to_message,
    to_prefixed_session,
)
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_sessions
from clarion.store.db.transactions import Tx


def bundle_order(message: Message) -> tuple[int, datetime, str]:
    index = message.metadata.get(MetaKey.QUESTION_INDEX)
    rank = index if isinstance(index, int) and not isinstance(index, bool) else 1 << 30
    return rank, message.created_at, message.id


# Built once (statements with bind parameters): building and cache-keying a statement that
# carries the metadata predicates costs more than executing it.
_BUNDLE_ROWS = hot(
    select(messages).where(messages.c.pending_id == bindparam("pending_id"), not_parent_question())
)
# A bundle whole, in one statement: each row with its session and that session's current turn
# (a well-formed bundle's rows share them; a malformed one is read as it is). One statement is
# one snapshot, so it needs no transaction around it.
_BUNDLE_WITH_SESSION = hot(
    select(
        messages,
        *prefixed_session_columns(),
        current_turn_id(task_sessions.c.id).label("current_turn_id"),
    )
    .select_from(messages.join(task_sessions, task_sessions.c.id == messages.c.task_session_id))
    .where(messages.c.pending_id == bindparam("pending_id"), not_parent_question())
)
_BUNDLE_SESSION = hot(
    select(messages.c.task_session_id)
    .where(messages.c.pending_id == bindparam("pending_id"))
    .limit(1)
)
_SET_METADATA = hot(
    update(messages)
    .where(messages.c.id == bindparam("message_id"))
    .values(metadata=bindparam("new_metadata", type_=JsonText))
    .returning(*messages.c)
)
_SET_METADATA_AND_TIME = hot(
    update(messages)
    .where(messages.c.id == bindparam("message_id"))
    .values(
        metadata=bindparam("new_metadata", type_=JsonText),
        updated_at=bindparam("new_updated_at", type_=UtcDateTime),
    )
    .returning(*messages.c)
)
# The batch forms: one statement for many rows, nothing read back.
_SET_METADATA_OF_EACH = (
    update(messages)
    .where(messages.c.id == bindparam("message_id"))
    .values(metadata=bindparam("new_metadata", type_=JsonText))
)
_SET_METADATA_AND_TIME_OF_EACH = _SET_METADATA_OF_EACH.values(
    updated_at=bindparam("new_updated_at", type_=UtcDateTime)
)


async def select_rows(
    conn: Tx,
    *where: ColumnElement[bool],
) -> list[Message]:
    return await run_rows(conn, select(messages).where(*where))


async def run_rows(
    conn: Tx, query: Executable, params: Mapping[str, Any] | None = None
) -> list[Message]:
    """Message rows of `query` (a prebuilt statement with `params`), in bundle order."""
    rows = [to_message(row) for row in await conn.execute(query, dict(params or {}))]
    return sorted(rows, key=bundle_order)


async def bundle_rows(conn: Tx, pending_id: str) -> list[Message]:
    """Every row carrying the pending id (any type, so malformed bundles are visible), except
    parent questions, which are ignored everywhere."""
    return await run_rows(conn, _BUNDLE_ROWS, {"pending_id": pending_id})


async def bundle_session_id(conn: Tx, pending_id: str) -> str | None:
    value = (await conn.execute(_BUNDLE_SESSION, {"pending_id": pending_id})).scalar()
    return None if value is None else str(value)


async def lock_bundle_session(db: Db, conn: Tx, pending_id: str) -> str | None:
    """The session of bundle `pending_id`, locked as `Db.lock_session` locks it; None when
    there is no such bundle. One statement on PostgreSQL; on SQLite the write transaction
    already holds the only lock, and this is the read alone."""
    if db.is_postgres:
        return await db.lock_bundle_session(conn, pending_id)
    return await bundle_session_id(conn, pending_id)


async def read_bundle(conn: Tx, pending_id: str) -> Bundle | None:
    """The bundle's rows in bundle order, with the session of the first of them (and its
    current turn); None when no row carries the pending id."""
    found = sorted(
        (
            (to_message(row), row)
            for row in await conn.execute(_BUNDLE_WITH_SESSION, {"pending_id": pending_id})
        ),
        key=lambda pair: bundle_order(pair[0]),
    )
    if not found:
        return None
    first = found[0][1]
    current = first.current_turn_id
    return Bundle(
        pending_id=pending_id,
        session=to_prefixed_session(first),
        rows=tuple(message for message, _ in found),
        current_turn_id=None if current is None else str(current),
    )


def is_well_formed(rows: Sequence[Message]) -> bool:
    """One session, one turn, one type: a bundle a claim may act on."""
    return len({(row.session_id, row.turn_id, row.type) for row in rows}) == 1


async def rewrite(
    conn: Tx,
    rows: Iterable[Message],
    transition: Transition,
    *,
    now: datetime | None = None,
    values: Mapping[str, Any] | None = None,
) -> tuple[Message, ...]:
    """Apply `transition` (domain/lifecycle.py) to each row's metadata: one UPDATE per row.
    Runs under the session lock, on rows the caller's guard selected, so the read-modify-write
    cannot interleave with another writer of the same rows. updated_at moves to `now` only
    when the transition stamps time (settling a claim keeps the claim time as the response
    time); such a transition needs `now`."""
    if transition.stamps_time and now is None:
        raise ValueError(f"{transition} moves updated_at: give it the time")
    changed: list[Message] = []
    for message in rows:
        params: dict[str, Any] = {
            "message_id": message.id,
            "new_metadata": transition.change(message.metadata, values),
        }
        if not transition.stamps_time:
            statement = _SET_METADATA
        else:
            statement = _SET_METADATA_AND_TIME
            params["new_updated_at"] = now
        row = (await conn.execute(statement, params)).first()
        if row is not None:
            changed.append(to_message(row))
    return tuple(sorted(changed, key=bundle_order))


async def rewrite_all(
    conn: Tx, rows: Sequence[Message], transition: Transition, *, now: datetime | None = None
) -> None:
    """`rewrite` for a batch: `transition` on every row in one statement, the rows not read
    back (startup settles many claims at once)."""
    if transition.stamps_time and now is None:
        raise ValueError(f"{transition} moves updated_at: give it the time")
    if not rows:
        return
    if not transition.stamps_time:
        await conn.execute(
            _SET_METADATA_OF_EACH,
            [{"message_id": m.id, "new_metadata": transition.change(m.metadata)} for m in rows],
        )
        return
    await conn.execute(
        _SET_METADATA_AND_TIME_OF_EACH,
        [
            {
                "message_id": m.id,
                "new_metadata": transition.change(m.metadata),
                "new_updated_at": now,
            }
            for m in rows
        ],
    )


def change_in_sql(transition: Transition) -> ColumnElement[str]:
    """`transition`'s change as a SQL expression over a row's metadata, for a set-based update
    that never brings the rows to Python (the caller moves `updated_at` when it stamps time).
    Only a change that sets flags true can be written so; any other raises ValueError."""
    if transition.drops or transition.fills or not transition.sets:
        raise ValueError(f"{transition} is not a change of flags set true")
    changed: ColumnElement[Any] = messages.c.metadata
    for key, value in transition.sets.items():
        if value is not True:
            raise ValueError(f"{transition} sets {key} to {value!r}, not true")
        changed = with_flag(changed, key)
    return changed
