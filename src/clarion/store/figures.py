"""The operator's gauges from the database: one read-only snapshot, taken when metrics are
scraped (and cached above the store), never on the answer path.

Store-internal. Waiting questions are the inbox's clarification candidates (the
pending rule's items), each with its workspace; the rest are counts by a column.
"""

from __future__ import annotations

from sqlalchemy import bindparam, func, select

from clarion.ports import Clock
from clarion.ports.metrics import OperationalFigures, WaitingQuestion
from clarion.store.db.engine import Db
from clarion.store.db.schema import replicas, task_sessions, tasks, webhook_deliveries, workspaces
from clarion.store.inbox import read_inbox
from clarion.store.pending_actions import chunks

_SESSIONS_BY_STATE = select(task_sessions.c.state, func.count()).group_by(task_sessions.c.state)
_WORKSPACES_OF_TASKS = (
    select(tasks.c.id, workspaces.c.name)
    .join(workspaces, workspaces.c.id == tasks.c.workspace_id)
    .where(tasks.c.id.in_(bindparam("ids", expanding=True)))
)
_OPEN_DELIVERIES = select(func.count()).where(
    webhook_deliveries.c.delivered_at.is_(None), webhook_deliveries.c.gave_up_at.is_(None)
)
_FAILED_DELIVERIES = select(func.count()).where(webhook_deliveries.c.gave_up_at.is_not(None))
_REPLICAS = select(func.count()).select_from(replicas)


class SqlFigures:
    """The metrics gauges' one read (`clarion.ports.metrics`)."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def operational_figures(self) -> OperationalFigures:
        async with self._db.read() as conn:
            entries = await read_inbox(conn, None)
            questions = [e for e in entries if e.kind == "clarification"]
            workspace_of: dict[str, str] = {}
            for part in chunks(sorted({e.task_id for e in questions})):
                rows = await conn.execute(_WORKSPACES_OF_TASKS, {"ids": part})
                workspace_of.update((str(task), str(name)) for task, name in rows)
            sessions = {str(state): int(n) for state, n in await conn.execute(_SESSIONS_BY_STATE)}
            open_deliveries = (await conn.execute(_OPEN_DELIVERIES)).scalar() or 0
            failed_deliveries = (await conn.execute(_FAILED_DELIVERIES)).scalar() or 0
            live_replicas = (await conn.execute(_REPLICAS)).scalar() or 0
        return OperationalFigures(
            waiting=tuple(
                WaitingQuestion(e.id, workspace_of.get(e.task_id, ""), e.created_at)
                for e in questions
            ),
            sessions=sessions,
            permissions_pending=sum(e.kind == "permission" for e in entries),
            deliveries={"pending": int(open_deliveries), "failed": int(failed_deliveries)},
            replicas=int(live_replicas),
            now=self._clock.now(),
        )
