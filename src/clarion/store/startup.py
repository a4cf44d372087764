"""Set-based startup steps: detach every orphaned bundle, interrupt every open turn, settle
session states, each as one transaction however many rows it touches.

Imported only by the SqlStore facade. Each step selects exactly the rows its one-at-a-time
counterpart would (`list_detachable_bundles` + `detach_bundles`, `list_open_turns` +
`complete_turn`, `transition_session`) and writes them with one batched statement
(executemany), so startup cost grows with the rows changed, not with round trips per row.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, not_, select, update

from clarion.domain.models import Message, MetaKey, SessionState, Turn
from clarion.store.bundles import bundle_order
from clarion.store.predicates import (
    TERMINAL_STATES,
    authoritative,
    clarification_rows,
    current_turns,
    status_pending,
)
from clarion.store.projections import chunks
from clarion.store.rows import StoreBase, to_message, to_turn
from clarion.store.schema import task_session_messages as messages
from clarion.store.schema import task_session_turns as turns
from clarion.store.schema import task_sessions
from clarion.store.sql import JsonText, UtcDateTime, flag, with_flag
from clarion.store.tasks import NON_TERMINAL

log = logging.getLogger(__name__)

_LIVE = task_sessions.c.state.not_in(TERMINAL_STATES)
_DETACHABLE_IN_TURNS = select(messages).where(
    messages.c.turn_id.in_(bindparam("turn_ids", expanding=True)),
    clarification_rows(),
    status_pending(),
    not_(flag(messages.c.metadata, MetaKey.AGENT_DISCONNECTED)),
)
_MARK_DISCONNECTED = (
    update(messages)
    .where(messages.c.id.in_(bindparam("message_ids", expanding=True)))
    .values(
        metadata=with_flag(messages.c.metadata, MetaKey.AGENT_DISCONNECTED),
        updated_at=bindparam("now", type_=UtcDateTime),
    )
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


class StartupQueries(StoreBase):
    async def detach_all_bundles(self) -> tuple[Message, ...]:
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "clarion-startup-recovery")
            current = {
                str(sid): str(tid)
                for sid, tid in await conn.execute(current_turns(_LIVE))
                if tid is not None
            }
            await self._db.lock_sessions(conn, sorted(current))
            found: list[Message] = []
            for part in chunks(list(current.values())):
                for row in await conn.execute(_DETACHABLE_IN_TURNS, {"turn_ids": part}):
                    message = to_message(row)
                    # A row counts only in its own session's current turn.
                    if current.get(message.session_id) == message.turn_id:
                        found.append(message)
            changed = [
                _replace(m, {**m.metadata, MetaKey.AGENT_DISCONNECTED: True}, now) for m in found
            ]
            for part in chunks([m.id for m in changed]):
                await conn.execute(_MARK_DISCONNECTED, {"message_ids": part, "now": now})
        if changed:
            log.info(
                "clarification bundles detached at startup",
                extra={
                    "rows": len(changed),
                    "pending_ids": len({m.metadata.get(MetaKey.PENDING_ID) for m in changed}),
                },
            )
        return tuple(sorted(changed, key=lambda m: (m.session_id, *bundle_order(m))))

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


def _replace(message: Message, metadata: dict[str, Any], now: Any) -> Message:
    return Message(
        id=message.id,
        session_id=message.session_id,
        task_id=message.task_id,
        turn_id=message.turn_id,
        author_type=message.author_type,
        type=message.type,
        content=message.content,
        metadata=metadata,
        created_at=message.created_at,
        updated_at=now,
        requests_input=message.requests_input,
    )
