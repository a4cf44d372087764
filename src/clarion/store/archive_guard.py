"""Archiving a task, its guard: refused while anything of the task waits or a turn is open, by
the rows, and the worktree's move to `removed` in the same transaction.

The check reads durable rows, not a replica's memory, so it is right whichever replica serves
the request (a task's sessions may belong to several). It takes each live session's advisory
key first, the one every write of that session's turns and clarification rows takes: a prompt,
answer or review that committed before is seen; one that comes after waits for the archive to
commit and then finds the worktree `removed` (its agent cannot start there). Only the keys, not
the session rows: this writes nothing to the sessions, so it needs no ownership (the cluster
fence guards the rows of another replica's sessions). Store-internal.
"""

from __future__ import annotations

import logging

from sqlalchemy import select, update

from clarion.domain.errors import NotFound, PendingInput, SessionBusy
from clarion.domain.models import Task, WorktreeState
from clarion.ports import Clock
from clarion.store.db.engine import SESSION_KEY_PREFIX, Db
from clarion.store.db.predicates import TERMINAL_STATES
from clarion.store.db.row_conversion import to_task
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions, tasks
from clarion.store.pending_actions import (
    live_current_turns,
    sessions_with_pending,
    sessions_with_pending_permission,
)

log = logging.getLogger(__name__)

LIVE = (WorktreeState.CREATING.value, WorktreeState.READY.value)


async def claim_archive(db: Db, clock: Clock, task_id: str) -> Task:
    async with db.write() as conn:
        found = (await conn.execute(select(tasks.c.id).where(tasks.c.id == task_id))).first()
        if found is None:
            raise NotFound("task not found", task_id=task_id)
        live = sorted(
            str(r.id)
            for r in await conn.execute(
                select(task_sessions.c.id).where(
                    task_sessions.c.task_id == task_id,
                    task_sessions.c.state.not_in(TERMINAL_STATES),
                )
            )
        )
        for session_id in live:  # in id order, as every writer of many sessions takes them
            await db.lock_key(conn, SESSION_KEY_PREFIX + session_id)
        current = await live_current_turns(conn, live)
        waiting = await sessions_with_pending(conn, current)
        waiting |= await sessions_with_pending_permission(conn, current)
        if waiting:
            raise PendingInput(
                "the task has a question or permission request waiting",
                task_id=task_id,
                session_id=min(waiting),
            )
        busy = (
            await conn.execute(
                select(turns.c.task_session_id, turns.c.id)
                .where(turns.c.task_session_id.in_(live), turns.c.completed_at.is_(None))
                .order_by(turns.c.task_session_id)
                .limit(1)
            )
        ).first()
        if busy is not None:
            raise SessionBusy(
                "a session of the task has a turn running",
                task_id=task_id,
                session_id=str(busy.task_session_id),
                turn_id=str(busy.id),
            )
        row = (
            await conn.execute(
                update(tasks)
                .where(tasks.c.id == task_id, tasks.c.worktree_state.in_(LIVE))
                .values(worktree_state=WorktreeState.REMOVED.value, updated_at=clock.now())
                .returning(*tasks.c)
            )
        ).first()
        if row is None:
            row = (await conn.execute(select(tasks).where(tasks.c.id == task_id))).one()
        else:
            log.info("archive: worktree removed by its row", extra={"task_id": task_id})
    return to_task(row)
