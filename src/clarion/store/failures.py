"""Agent failures made durable: the `error` transcript row, the session's `error` field and,
when the failure ends the session, its move to FAILED, in one commit. Imported only by the
SqlStore facade.
"""

from __future__ import annotations

import logging

from sqlalchemy import insert, update

from clarion.domain.ids import new_id
from clarion.domain.models import Message, MetaKey, Session, SessionState, Turn
from clarion.domain.webhooks import SESSION_FAILED, WebhookFact
from clarion.ports import NewMessage
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions
from clarion.store.messages import insert_message, resolve_turn
from clarion.store.outbox import OutboxQueries
from clarion.store.tasks import NON_TERMINAL, read_session

log = logging.getLogger(__name__)

SESSION_ERROR_KEY = "error"


class FailureQueries(OutboxQueries):
    async def record_agent_failure(
        self,
        new: NewMessage,
        *,
        error: str,
        session_state: SessionState | None = None,
        turn_metadata: dict[str, object] | None = None,
    ) -> tuple[Message, Session, Turn | None]:
        """Write the error row and set the session's `error` (and, with `session_state`, move a
        non-terminal session there). With `turn_metadata` the row goes into a new, completed
        lifecycle turn carrying that metadata (a failure outside any prompt); otherwise into
        `new.turn_id` or the current turn. Returns the row, the session and the new turn."""
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, new.session_id)
            session = await read_session(conn, new.session_id)
            turn: Turn | None = None
            if turn_metadata is not None:
                turn = Turn(
                    id=new_id(),
                    session_id=session.id,
                    task_id=session.task_id,
                    started_at=now,
                    completed_at=now,
                    metadata={**turn_metadata, MetaKey.LIFECYCLE_ONLY: True},
                    created_at=now,
                    updated_at=now,
                )
                await conn.execute(
                    insert(turns).values(
                        id=turn.id,
                        task_session_id=turn.session_id,
                        task_id=turn.task_id,
                        started_at=now,
                        completed_at=now,
                        metadata=dict(turn.metadata),
                        created_at=now,
                        updated_at=now,
                    )
                )
                task_id, turn_id = session.task_id, turn.id
            else:
                task_id, turn_id = await resolve_turn(conn, new.session_id, new.turn_id)
            row = await insert_message(conn, new, task_id=task_id, turn_id=turn_id, now=now)
            values: dict[str, object] = {
                "metadata": {**session.metadata, SESSION_ERROR_KEY: error},
                "updated_at": now,
            }
            if session_state is not None and not session.state.is_terminal:
                values["state"] = session_state.value
            await conn.execute(
                update(task_sessions)
                .where(
                    task_sessions.c.id == session.id,
                    task_sessions.c.state.in_([s.value for s in NON_TERMINAL]),
                )
                .values(**values)
            )
            after = await read_session(conn, session.id)
            if after.state is SessionState.FAILED and session.state is not SessionState.FAILED:
                await self._enqueue(
                    conn,
                    SESSION_FAILED,
                    session.task_id,
                    lambda title: WebhookFact(
                        SESSION_FAILED,
                        session.task_id,
                        title,
                        session.id,
                        message_id=row.id,
                        detail=error,
                    ),
                    now,
                )
        log.info(
            "agent failure recorded",
            extra={
                "session_id": session.id,
                "message_id": row.id,
                "turn_id": turn_id,
                "state": str(after.state),
            },
        )
        return row, after, turn
