"""After a restart: ambiguous answers sent again on request, and each agent's context.

Imported only by the SqlStore facade. A resend is claimed like a response: one write under the
session lock marks the bundle's ambiguous rows `resend_pending` (at most one resend in flight),
and it either settles (`delivery: "delivered"`, the turn it started recorded) or is released
back to ambiguous. Startup releases every resend a stopped process left in flight: whether that
agent got the prompt is as unknown as the first dispatch was.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import bindparam, select, update

from clarion.domain.flags import flag as is_set
from clarion.domain.models import Delivery, Message, MetaKey
from clarion.store.bundles import bundle_rows, bundle_session_id, drop_keys, rewrite, select_rows
from clarion.store.rows import StoreBase, to_message
from clarion.store.schema import task_session_messages as messages
from clarion.store.schema import task_sessions
from clarion.store.sql import JsonText, flag
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


def _ambiguous(row: Message) -> bool:
    return row.metadata.get(MetaKey.DELIVERY) == Delivery.AMBIGUOUS.value


def _releasable(meta: dict[str, Any]) -> dict[str, Any]:
    return drop_keys(MetaKey.RESEND_PENDING)(meta)


class DeliveryQueries(StoreBase):
    async def claim_resend(self, pending_id: str) -> tuple[Message, ...]:
        async with self._db.write() as conn:
            session_id = await bundle_session_id(conn, pending_id)
            if session_id is None:
                return ()
            await self._db.lock_session(conn, session_id)
            if (await read_session(conn, session_id)).state.is_terminal:
                return ()
            rows = [r for r in await bundle_rows(conn, pending_id) if _ambiguous(r)]
            if not rows or any(is_set(r.metadata, MetaKey.RESEND_PENDING) for r in rows):
                return ()
            claimed = await rewrite(
                conn, rows, lambda m: {**m, MetaKey.RESEND_PENDING: True}, now=None
            )
        log.info("resend claimed", extra={"pending_id": pending_id, "session_id": session_id})
        return claimed

    async def release_resend(self, pending_id: str) -> tuple[Message, ...]:
        async with self._db.write() as conn:
            session_id = await bundle_session_id(conn, pending_id)
            if session_id is None:
                return ()
            await self._db.lock_session(conn, session_id)
            rows = [
                r
                for r in await bundle_rows(conn, pending_id)
                if is_set(r.metadata, MetaKey.RESEND_PENDING)
            ]
            released = await rewrite(conn, rows, _releasable, now=None)
        log.info("resend released", extra={"pending_id": pending_id, "rows": len(released)})
        return released

    async def finish_resend(self, pending_id: str, turn_id: str) -> tuple[Message, ...]:
        def settled(meta: dict[str, Any]) -> dict[str, Any]:
            return {
                **_releasable(meta),
                MetaKey.DELIVERY: Delivery.DELIVERED.value,
                MetaKey.RESENT_TURN_ID: turn_id,
            }

        async with self._db.write() as conn:
            session_id = await bundle_session_id(conn, pending_id)
            if session_id is None:
                return ()
            await self._db.lock_session(conn, session_id)
            rows = [
                r
                for r in await bundle_rows(conn, pending_id)
                if is_set(r.metadata, MetaKey.RESEND_PENDING)
            ]
            finished = await rewrite(conn, rows, settled, now=None)
        log.info(
            "resend delivered",
            extra={"pending_id": pending_id, "session_id": session_id, "turn_id": turn_id},
        )
        return finished

    async def release_resends(self) -> list[str]:
        async with self._db.write() as conn:
            rows = await select_rows(conn, flag(messages.c.metadata, MetaKey.RESEND_PENDING))
            await self._db.lock_sessions(conn, [r.session_id for r in rows])
            released = await rewrite(conn, rows, _releasable, now=None)
        return sorted({str(r.metadata.get(MetaKey.PENDING_ID, "")) for r in released})

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
