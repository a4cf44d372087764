"""Pending-action projections derived from the repository rule. Imported by the facade only."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from clarion.domain.models import MessageType, MetaKey, PendingAction
from clarion.store.predicates import (
    PENDING_STATUSES,
    TERMINAL_STATES,
    current_turn_id,
    not_parent_question,
    pending_in_current_turn,
)
from clarion.store.rows import StoreBase
from clarion.store.schema import task_session_messages as messages
from clarion.store.schema import task_sessions


async def _sessions_with_pending(conn: AsyncConnection, session_ids: Sequence[str]) -> set[str]:
    if not session_ids:
        return set()
    query = (
        select(messages.c.task_session_id)
        .distinct()
        .where(messages.c.task_session_id.in_(list(session_ids)), pending_in_current_turn())
    )
    return {str(v) for v in (await conn.execute(query)).scalars()}


async def _permission_pending(conn: AsyncConnection, session_id: str) -> bool:
    """The newest current-turn permission request decides; older ones are history."""
    row = (
        await conn.execute(
            select(messages.c.metadata)
            .where(
                messages.c.turn_id == current_turn_id(session_id),
                messages.c.task_session_id == session_id,
                messages.c.type == MessageType.PERMISSION_REQUEST.value,
                not_parent_question(),
            )
            .order_by(messages.c.created_at.desc(), messages.c.id.desc())
            .limit(1)
        )
    ).first()
    if row is None:
        return False
    status = row.metadata.get(MetaKey.STATUS)
    return (status or "") in PENDING_STATUSES


class ProjectionQueries(StoreBase):
    async def pending_actions(self, session_ids: Sequence[str]) -> dict[str, PendingAction | None]:
        wanted = list(dict.fromkeys(session_ids))
        result: dict[str, PendingAction | None] = dict.fromkeys(wanted)
        if not wanted:
            return result
        async with self._db.read() as conn:
            live = [
                str(v)
                for v in (
                    await conn.execute(
                        select(task_sessions.c.id).where(
                            task_sessions.c.id.in_(wanted),
                            task_sessions.c.state.not_in(TERMINAL_STATES),
                        )
                    )
                ).scalars()
            ]
            clarifying = await _sessions_with_pending(conn, live)
            for session_id in live:
                if session_id in clarifying:
                    result[session_id] = PendingAction.CLARIFICATION
                elif await _permission_pending(conn, session_id):
                    result[session_id] = PendingAction.PERMISSION
        return result

    async def sessions_with_active_clarification(self, task_id: str) -> list[str]:
        async with self._db.read() as conn:
            live = [
                str(v)
                for v in (
                    await conn.execute(
                        select(task_sessions.c.id)
                        .where(
                            task_sessions.c.task_id == task_id,
                            task_sessions.c.state.not_in(TERMINAL_STATES),
                        )
                        .order_by(task_sessions.c.created_at, task_sessions.c.id)
                    )
                ).scalars()
            ]
            clarifying = await _sessions_with_pending(conn, live)
        return [s for s in live if s in clarifying]
