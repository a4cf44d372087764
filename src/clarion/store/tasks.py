"""Workspaces, tasks and sessions. Imported only by the SqlStore facade."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import bindparam, insert, select, update

from clarion.domain.errors import NotFound
from clarion.domain.ids import new_id
from clarion.domain.models import (
    TERMINAL_SESSION_STATES,
    Session,
    SessionState,
    Task,
    WorkflowStep,
    Workspace,
)
from clarion.store.db.fastpath import hot
from clarion.store.db.row_conversion import StoreBase, to_session, to_task, to_workspace
from clarion.store.db.schema import task_sessions, tasks, workspaces
from clarion.store.db.transactions import Tx

NON_TERMINAL = tuple(s for s in SessionState if s not in TERMINAL_SESSION_STATES)


_SESSION_BY_ID = hot(select(task_sessions).where(task_sessions.c.id == bindparam("session_id")))
SESSIONS_OF_TASK = hot(
    select(task_sessions)
    .where(task_sessions.c.task_id == bindparam("task_id"))
    .order_by(task_sessions.c.created_at, task_sessions.c.id)
)


async def read_session(conn: Tx, session_id: str) -> Session:
    row = (await conn.execute(_SESSION_BY_ID, {"session_id": session_id})).first()
    if row is None:
        raise NotFound("session not found", session_id=session_id)
    return to_session(row)


_MOVE_SESSION = hot(
    update(task_sessions)
    .where(
        task_sessions.c.id == bindparam("session_id"),
        task_sessions.c.state.in_(bindparam("allowed", expanding=True)),
    )
    .values(state=bindparam("to"), updated_at=bindparam("now"))
    .returning(*task_sessions.c)
)


async def move_session(
    conn: Tx,
    session_id: str,
    to: SessionState,
    allowed: Sequence[SessionState],
    now: datetime,
) -> Session | None:
    """Move the session to `to` if its state is in `allowed` and not `to` already, and return
    it as it now stands: None when it is missing or could not move (already being in `to`,
    with `to` allowed, counts as moved). The UPDATE locks the row it changes (what
    `lock_session` would take) and returns it, so a move is one statement; one that matches
    nothing writes nothing (no commit on SQLite, no transaction id on PostgreSQL), and only
    then is the session read."""
    sources = [s.value for s in allowed if s is not to]
    if sources:
        moved = await conn.execute(
            _MOVE_SESSION,
            {"session_id": session_id, "allowed": sources, "to": to.value, "now": now},
        )
        row = moved.first()
        if row is not None:
            return to_session(row)
    row = (await conn.execute(_SESSION_BY_ID, {"session_id": session_id})).first()
    if row is None or not (row.state == to.value and to in allowed):
        return None
    return to_session(row)


async def move_with(
    conn: Tx, session_id: str, to: SessionState | None, now: datetime
) -> Session | None:
    """For writes that may also move a non-terminal session in their transaction: the
    session as `move_session` leaves it, or None when there was nothing to move to."""
    if to is None:
        return None
    return await move_session(conn, session_id, to, NON_TERMINAL, now)


class TaskQueries(StoreBase):
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

    async def get_workspace(self, workspace_id: str) -> Workspace:
        query = select(workspaces).where(workspaces.c.id == workspace_id)
        async with self._db.read() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            raise NotFound("workspace not found", workspace_id=workspace_id)
        return to_workspace(row)

    async def create_task(self, *, title: str, description: str, workspace_id: str) -> Task:
        now = self._clock.now()
        task = Task(
            id=new_id(),
            title=title,
            description=description,
            workspace_id=workspace_id,
            workflow_step=WorkflowStep.BACKLOG,
            created_at=now,
            updated_at=now,
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
                )
            )
        return task

    async def get_task(self, task_id: str) -> Task:
        async with self._db.read_one() as conn:
            row = (await conn.execute(select(tasks).where(tasks.c.id == task_id))).first()
        if row is None:
            raise NotFound("task not found", task_id=task_id)
        return to_task(row)

    async def list_tasks(self, workspace_ids: Sequence[str] | None = None) -> list[Task]:
        query = select(tasks).order_by(tasks.c.created_at, tasks.c.id)
        if workspace_ids is not None:
            query = query.where(tasks.c.workspace_id.in_(list(workspace_ids)))
        async with self._db.read() as conn:
            return [to_task(row) for row in await conn.execute(query)]

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

    async def get_session(self, session_id: str) -> Session:
        async with self._db.read_one() as conn:
            return await read_session(conn, session_id)

    async def list_sessions(self, task_id: str) -> list[Session]:
        async with self._db.read_one() as conn:
            rows = await conn.execute(SESSIONS_OF_TASK, {"task_id": task_id})
            return [to_session(row) for row in rows]

    async def list_sessions_in_states(self, states: Sequence[SessionState]) -> list[Session]:
        query = (
            select(task_sessions)
            .where(task_sessions.c.state.in_([s.value for s in states]))
            .order_by(task_sessions.c.created_at, task_sessions.c.id)
        )
        async with self._db.read() as conn:
            return [to_session(row) for row in await conn.execute(query)]

    async def transition_session(
        self,
        session_id: str,
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> Session | None:
        allowed = NON_TERMINAL if allowed_from is None else tuple(allowed_from)
        async with self._db.write() as conn:
            # Already in the target state (and that state allowed) counts as moved; nothing is
            # written then, so the transaction commits nothing.
            return await move_session(conn, session_id, to, allowed, self._clock.now())
