"""A task's worktree row: claimed (`creating`) before git runs, then `ready`, then `removed`.

Every change is a guarded update that reports whether it applied: two session starts of one
task race to claim it and exactly one writes `creating`; the other reads what the winner
wrote. Built and composed by `clarion.store.sql_store.SqlStore`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, exists, or_, select, text, update

from clarion.domain.models import Task, Worktree, WorktreeState
from clarion.ports import Clock
from clarion.ports.cluster import SessionRoute
from clarion.store.archive_guard import claim_archive
from clarion.store.db.engine import Db
from clarion.store.db.predicates import TERMINAL_STATES
from clarion.store.db.row_conversion import to_task
from clarion.store.db.schema import task_sessions, tasks

log = logging.getLogger(__name__)

# The primary session of a task (the oldest when none is marked primary): whose replica serves
# the requests that act on the task's worktree.
_PRIMARY_OWNER = text(
    "SELECT s.id, s.owner_replica_id AS owner FROM task_sessions AS s WHERE s.task_id = :id "
    "ORDER BY s.is_primary DESC, s.created_at, s.id LIMIT 1"
)


class SqlWorktrees:
    """`clarion.ports.store.worktrees.WorktreeStore` on SQL."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def claim_worktree(self, task_id: str, worktree: Worktree) -> Task | None:
        async with self._db.write() as conn:
            row = (
                await conn.execute(
                    update(tasks)
                    .where(tasks.c.id == task_id, tasks.c.worktree_state.is_(None))
                    .values(
                        worktree_path=worktree.path,
                        worktree_branch=worktree.branch,
                        worktree_base=worktree.base,
                        worktree_state=worktree.state.value,
                        updated_at=self._clock.now(),
                    )
                    .returning(*tasks.c)
                )
            ).first()
        if row is None:
            return None
        log.info(
            "worktree claimed",
            extra={"task_id": task_id, "path": worktree.path, "branch": worktree.branch},
        )
        return to_task(row)

    async def set_worktree_state(
        self,
        task_id: str,
        to: WorktreeState,
        *,
        allowed_from: Sequence[WorktreeState],
        without_sessions: bool = False,
    ) -> Task | None:
        guard = [
            tasks.c.id == task_id,
            tasks.c.worktree_state.in_([s.value for s in allowed_from]),
        ]
        if without_sessions:
            guard.append(~exists().where(task_sessions.c.task_id == tasks.c.id))
        async with self._db.write() as conn:
            row = (
                await conn.execute(
                    update(tasks)
                    .where(*guard)
                    .values(worktree_state=to.value, updated_at=self._clock.now())
                    .returning(*tasks.c)
                )
            ).first()
        if row is None:
            return None
        log.info("worktree state", extra={"task_id": task_id, "state": to.value})
        return to_task(row)

    async def worktree_tasks(
        self,
        states: Sequence[WorktreeState],
        *,
        session_ids: Sequence[str] | None = None,
        without_sessions: bool = False,
        sessions_ended_before: datetime | None = None,
    ) -> list[Task]:
        query = select(tasks).where(tasks.c.worktree_state.in_([s.value for s in states]))
        if without_sessions:
            query = query.where(~exists().where(task_sessions.c.task_id == tasks.c.id))
        if sessions_ended_before is not None:
            # Every session of the task is one a prune at this cutoff deletes (or there is
            # none): none alive, none that ended at or after the cutoff.
            query = query.where(
                ~exists().where(
                    task_sessions.c.task_id == tasks.c.id,
                    or_(
                        task_sessions.c.state.not_in(TERMINAL_STATES),
                        task_sessions.c.updated_at >= sessions_ended_before,
                    ),
                )
            )
        if session_ids is not None:
            if not session_ids:
                return []
            query = query.where(
                exists().where(
                    and_(
                        task_sessions.c.task_id == tasks.c.id,
                        task_sessions.c.id.in_(list(session_ids)),
                    )
                )
            )
        async with self._db.read_one() as conn:
            rows = await conn.execute(query.order_by(tasks.c.created_at, tasks.c.id))
            return [to_task(row) for row in rows]

    async def claim_archive(self, task_id: str) -> Task:
        return await claim_archive(self._db, self._clock, task_id)

    async def route_of_task(self, task_id: str) -> SessionRoute | None:
        async with self._db.read_one() as conn:
            row = (await conn.execute(_PRIMARY_OWNER, {"id": task_id})).first()
        if row is None:
            return None
        return SessionRoute(str(row.id), None if row.owner is None else str(row.owner))
