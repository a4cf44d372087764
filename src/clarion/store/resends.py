"""After a restart: answers whose delivery is unknown, sent again on request; agents' context.

Imported only by the SqlStore facade. A live answer whose turn a restart interrupted before the
agent wrote anything after it reads ambiguous: the confirmation commits before the tool result
is written back, so the agent may never have read it. A resend is claimed like a response: one
write under the session lock marks the bundle's ambiguous rows `resend_pending` (at most one
resend in flight), and it either settles (`delivery: "delivered"`, the turn it started
recorded) or is released back to ambiguous. Startup releases every resend a stopped process
left in flight: whether that agent got the prompt is as unknown as the first dispatch was.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam, select, update

from clarion.domain.flags import flag as is_set
from clarion.domain.lifecycle import (
    CLAIM_RESEND,
    FINISH_RESEND,
    MARK_UNREAD,
    RELEASE_RESEND,
    Transition,
    resent_by,
)
from clarion.domain.models import Delivery, Message, MetaKey
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.store.bundle_rows import bundle_rows, lock_bundle_session, rewrite, select_rows
from clarion.store.db.portable_sql import JsonText, UtcDateTime, flag, meta_text
from clarion.store.db.predicates import authoritative, clarification_rows
from clarion.store.db.row_conversion import StoreBase, to_message
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.pending_actions import chunks
from clarion.store.tasks import read_session

log = logging.getLogger(__name__)

_RECENT = (
    select(messages)
    .where(messages.c.task_session_id == bindparam("session_id"))
    .order_by(messages.c.created_at.desc(), messages.c.id.desc())
    .limit(bindparam("limit"))
)
_SET_SESSION_METADATA = (
    update(task_sessions)
    .where(task_sessions.c.id == bindparam("session_id"))
    .values(metadata=bindparam("new_metadata", type_=JsonText))
)


_OPEN_TURN_IDS = select(turns.c.id).where(turns.c.completed_at.is_(None), authoritative(turns))
# Answers confirmed to a live waiter: the confirmation records `delivery: "delivered"`.
_DELIVERED_IN = (
    clarification_rows(),
    meta_text(messages.c.metadata, MetaKey.DELIVERY) == Delivery.DELIVERED.value,
)
# The agent wrote something in the turn after the answer was given: it read the answer.
_AGENT_SPOKE_AFTER = (
    select(messages.c.id)
    .where(
        messages.c.turn_id == bindparam("turn_id"),
        messages.c.author_type == "agent",
        messages.c.type != "clarification_request",
        messages.c.created_at > bindparam("after", type_=UtcDateTime),
    )
    .limit(1)
)


def _ambiguous(row: Message) -> bool:
    return row.metadata.get(MetaKey.DELIVERY) == Delivery.AMBIGUOUS.value


class DeliveryQueries(StoreBase):
    async def claim_resend(self, pending_id: str) -> tuple[Message, ...]:
        async with self._db.write() as conn:
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return ()
            if (await read_session(conn, session_id)).state.is_terminal:
                return ()
            rows = [r for r in await bundle_rows(conn, pending_id) if _ambiguous(r)]
            if not rows or any(is_set(r.metadata, MetaKey.RESEND_PENDING) for r in rows):
                return ()
            claimed = await rewrite(conn, rows, CLAIM_RESEND)
        log.info("resend claimed", extra={"pending_id": pending_id, "session_id": session_id})
        return claimed

    async def release_resend(self, pending_id: str) -> tuple[Message, ...]:
        released = await self._settle_resend(pending_id, RELEASE_RESEND)
        log.info("resend released", extra={"pending_id": pending_id, "rows": len(released)})
        return released

    async def finish_resend(self, pending_id: str, turn_id: str) -> tuple[Message, ...]:
        finished = await self._settle_resend(pending_id, FINISH_RESEND, resent_by(turn_id))
        log.info("resend delivered", extra={"pending_id": pending_id, "turn_id": turn_id})
        return finished

    async def _settle_resend(
        self,
        pending_id: str,
        transition: Transition,
        values: Mapping[str, Any] | None = None,
    ) -> tuple[Message, ...]:
        """Apply `transition` to the bundle's rows whose resend is in flight, under the lock."""
        async with self._db.write() as conn:
            session_id = await lock_bundle_session(self._db, conn, pending_id)
            if session_id is None:
                return ()
            rows = [
                r
                for r in await bundle_rows(conn, pending_id)
                if is_set(r.metadata, MetaKey.RESEND_PENDING)
            ]
            return await rewrite(conn, rows, transition, values=values)

    async def release_resends(self, *, scope: SessionScope = EVERY_SESSION) -> list[str]:
        async with self._db.write() as conn:
            rows = scope.pick(
                await select_rows(conn, flag(messages.c.metadata, MetaKey.RESEND_PENDING)),
                lambda r: r.session_id,
            )
            await self._db.lock_sessions(conn, [r.session_id for r in rows])
            released = await rewrite(conn, rows, RELEASE_RESEND)
        return sorted({str(r.metadata.get(MetaKey.PENDING_ID, "")) for r in released})

    async def mark_unread_live_answers(self, *, scope: SessionScope = EVERY_SESSION) -> list[str]:
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "clarion-startup-recovery")
            open_turns = [str(t) for t in (await conn.execute(_OPEN_TURN_IDS)).scalars()]
            delivered: list[Message] = []
            for part in chunks(open_turns):
                delivered.extend(
                    await select_rows(conn, *_DELIVERED_IN, messages.c.turn_id.in_(part))
                )
            by_bundle: dict[tuple[str, str], list[Message]] = {}
            for row in scope.pick(delivered, lambda r: r.session_id):
                key = (row.turn_id or "", str(row.metadata.get(MetaKey.PENDING_ID, "")))
                by_bundle.setdefault(key, []).append(row)
            unread: list[Message] = []
            for (turn_id, _), rows in sorted(by_bundle.items()):
                answered_at = max(r.updated_at for r in rows)
                spoke = await conn.execute(
                    _AGENT_SPOKE_AFTER, {"turn_id": turn_id, "after": answered_at}
                )
                if spoke.first() is None:
                    unread.extend(rows)
            await self._db.lock_sessions(conn, [r.session_id for r in unread])
            marked = await rewrite(conn, unread, MARK_UNREAD)
        return sorted({str(r.metadata.get(MetaKey.PENDING_ID, "")) for r in marked})

    async def recent_messages(self, session_id: str, limit: int) -> list[Message]:
        async with self._db.read() as conn:
            result = await conn.execute(_RECENT, {"session_id": session_id, "limit": limit})
            rows = [to_message(row) for row in result]
        return rows[::-1]

    async def remember_acp_session(self, session_id: str, acp_session_id: str) -> bool:
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            session = await read_session(conn, session_id)
            if session.metadata.get(MetaKey.ACP_SESSION_ID) == acp_session_id:
                return False
            await conn.execute(
                _SET_SESSION_METADATA,
                {
                    "session_id": session_id,
                    "new_metadata": {**session.metadata, MetaKey.ACP_SESSION_ID: acp_session_id},
                },
            )
        log.info(
            "agent session recorded",
            extra={"session_id": session_id, "acp_session_id": acp_session_id},
        )
        return True
