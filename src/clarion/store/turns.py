"""TurnStore: workspaces, tasks, sessions, turns and transcript messages as the agent side
writes them, and the durable record of an agent stopped while idle.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, insert, select, update

from clarion.domain.errors import NotFound
from clarion.domain.ids import new_id
from clarion.domain.models import (
    Message,
    MetaKey,
    Session,
    SessionState,
    Task,
    Turn,
    WorkflowStep,
    Workspace,
)
from clarion.domain.turn_outcomes import TurnEnd
from clarion.ports import Clock, NewMessage
from clarion.store import agent_stops, resends
from clarion.store.answer_statements import (
    ACTIVE_IDS,
)
from clarion.store.db.engine import Db
from clarion.store.db.row_conversion import to_message, to_task, to_workspace
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_sessions, tasks, workspaces
from clarion.store.messages import (
    insert_message,
    keep_reservation_evidence,
    read_message,
    resolve_turn,
)
from clarion.store.resends import (
    RECENT,
)
from clarion.store.tasks import (
    NON_TERMINAL,
    move_session,
    read_session,
)
from clarion.store.turn_rows import (
    complete_open_turn,
    insert_turn,
    read_current_turn,
    read_locked_turn,
    read_turn,
)

log = logging.getLogger(__name__)


class SqlTurns:
    """`clarion.ports.store.turns.TurnStore` on SQL (`Lookups`: `SqlLookups`)."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def ensure_workspace(self, name: str) -> Workspace:
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "workspace:" + name)
            row = (await conn.execute(select(workspaces).where(workspaces.c.name == name))).first()
            if row is not None:
                return to_workspace(row)
            workspace = Workspace(id=new_id(), name=name)
            await conn.execute(
                insert(workspaces).values(id=workspace.id, name=name, created_at=self._clock.now())
            )
            return workspace

    async def create_task(
        self, *, title: str, description: str, workspace_id: str, repository: str | None = None
    ) -> Task:
        now = self._clock.now()
        task = Task(
            id=new_id(),
            title=title,
            description=description,
            workspace_id=workspace_id,
            workflow_step=WorkflowStep.BACKLOG,
            created_at=now,
            updated_at=now,
            repository=repository,
        )
        async with self._db.write() as conn:
            await conn.execute(
                insert(tasks).values(
                    id=task.id,
                    title=title,
                    description=description,
                    workspace_id=workspace_id,
                    workflow_step=task.workflow_step.value,
                    created_at=now,
                    updated_at=now,
                    repository=repository,
                )
            )
        return task

    async def set_task_step(self, task_id: str, step: WorkflowStep) -> Task:
        async with self._db.write() as conn:
            row = (
                await conn.execute(
                    update(tasks)
                    .where(tasks.c.id == task_id)
                    .values(workflow_step=step.value, updated_at=self._clock.now())
                    .returning(*tasks.c)
                )
            ).first()
        if row is None:
            raise NotFound("task not found", task_id=task_id)
        return to_task(row)

    async def create_session(self, *, task_id: str, agent: str, is_primary: bool) -> Session:
        now = self._clock.now()
        session = Session(
            id=new_id(),
            task_id=task_id,
            agent=agent,
            state=SessionState.CREATED,
            is_primary=is_primary,
            created_at=now,
            updated_at=now,
            owner_replica_id=self._db.owner,
        )
        async with self._db.write() as conn:
            exists = (await conn.execute(select(tasks.c.id).where(tasks.c.id == task_id))).first()
            if exists is None:
                raise NotFound("task not found", task_id=task_id)
            await self._db.check_registered(conn)
            await conn.execute(
                insert(task_sessions).values(
                    id=session.id,
                    task_id=task_id,
                    agent=agent,
                    state=session.state.value,
                    is_primary=is_primary,
                    metadata={},
                    created_at=now,
                    updated_at=now,
                    owner_replica_id=self._db.owner,
                )
            )
        return session

    async def transition_session(
        self,
        session_id: str,
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> Session | None:
        allowed = NON_TERMINAL if allowed_from is None else tuple(allowed_from)
        # One guarded UPDATE, and no lock: see `write_one`. Already in the target state (and
        # that state allowed) counts as moved; nothing is written then, only read.
        async with self._db.write_one() as conn:
            return await move_session(conn, session_id, to, allowed, self._clock.now())

    async def create_turn(
        self,
        session_id: str,
        *,
        lifecycle_only: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> Turn:
        meta = dict(metadata or {})
        if lifecycle_only:
            meta[MetaKey.LIFECYCLE_ONLY] = True
        now = self._clock.now()
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            session = await read_session(conn, session_id)
            turn = Turn(
                id=new_id(),
                session_id=session_id,
                task_id=session.task_id,
                started_at=now,
                completed_at=None,
                metadata=meta,
                created_at=now,
                updated_at=now,
            )
            await insert_turn(conn, turn)
        log.info(
            "turn created",
            extra={"session_id": session_id, "turn_id": turn.id, "lifecycle_only": lifecycle_only},
        )
        return turn

    async def complete_turn(self, turn_id: str, *, end: TurnEnd | None = None) -> bool:
        async with self._db.write() as conn:
            turn = await read_locked_turn(self._db, conn, turn_id)
            if turn is None or turn.completed_at is not None:
                return False
            metadata = {**turn.metadata, **(end.recorded() if end is not None else {})}
            await complete_open_turn(conn, turn_id, metadata, now=self._clock.now())
            return True

    async def get_turn(self, turn_id: str) -> Turn:
        async with self._db.read_one() as conn:
            turn = await read_turn(conn, turn_id)
        if turn is None:
            raise NotFound("turn not found", turn_id=turn_id)
        return turn

    async def find_current_turn(self, session_id: str) -> Turn | None:
        # One statement, so one snapshot: no transaction around it.
        async with self._db.read_one() as conn:
            return await read_current_turn(conn, session_id)

    async def add_message(self, new: NewMessage) -> Message:
        async with self._db.write() as conn:
            await self._db.lock_session(conn, new.session_id)
            task_id, turn_id = await resolve_turn(conn, new.session_id, new.turn_id)
            return await insert_message(
                conn, new, task_id=task_id, turn_id=turn_id, now=self._clock.now()
            )

    async def append_message_content(self, message_id: str, text: str) -> Message:
        async with self._db.write() as conn:
            row = (
                await conn.execute(
                    update(messages)
                    .where(messages.c.id == message_id)
                    .values(content=messages.c.content + text, updated_at=self._clock.now())
                    .returning(*messages.c)
                )
            ).first()
        if row is None:
            raise NotFound("message not found", message_id=message_id)
        return to_message(row)

    async def get_message(self, message_id: str) -> Message:
        async with self._db.read_one() as conn:
            message = await read_message(conn, message_id)
        if message is None:
            raise NotFound("message not found", message_id=message_id)
        return message

    async def delete_message(self, session_id: str, message_id: str) -> Message | None:
        # Turns are never deleted: ownership lives in the turn rows, not in their messages.
        async with self._db.write() as conn:
            await self._db.lock_session(conn, session_id)
            row = (
                await conn.execute(
                    delete(messages)
                    .where(messages.c.id == message_id, messages.c.task_session_id == session_id)
                    .returning(*messages.c)
                )
            ).first()
            if row is not None and row.turn_id is not None:
                await keep_reservation_evidence(conn, row.turn_id, self._clock.now())
        return None if row is None else to_message(row)

    async def list_active_bundle_ids(self, session_id: str) -> list[str]:
        async with self._db.read_one() as conn:
            result = await conn.execute(ACTIVE_IDS, {"session_id": session_id})
            return [str(value) for value in result.scalars()]

    async def recent_messages(self, session_id: str, limit: int) -> list[Message]:
        async with self._db.read() as conn:
            result = await conn.execute(RECENT, {"session_id": session_id, "limit": limit})
            rows = [to_message(row) for row in result]
        return rows[::-1]

    async def remember_acp_session(self, session_id: str, acp_session_id: str) -> bool:
        return await resends.remember_acp_session(self._db, session_id, acp_session_id)

    async def mark_agent_stopped(self, session_id: str) -> Session | None:
        return await agent_stops.mark_agent_stopped(self._db, self._clock, session_id)

    async def clear_agent_stopped(self, session_id: str) -> bool:
        return await agent_stops.clear_agent_stopped(self._db, self._clock, session_id)
