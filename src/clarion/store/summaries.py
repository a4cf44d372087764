"""Task status summaries: caches written by compare-and-set on their revision.

Imported only by the SqlStore facade.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from clarion.domain.errors import NotFound
from clarion.domain.models import StatusSummary
from clarion.ports import SummaryInputs
from clarion.store.db.fastpath import hot
from clarion.store.db.row_conversion import StoreBase, to_session
from clarion.store.db.schema import task_status_summaries, tasks
from clarion.store.db.transactions import Tx
from clarion.store.pending_actions import read_pending_actions
from clarion.store.tasks import SESSIONS_OF_TASK

log = logging.getLogger(__name__)
summaries = task_status_summaries


_SUMMARY_OF_TASK = hot(select(summaries).where(summaries.c.task_id == bindparam("task_id")))
# The compare-and-set statements, built once: building and cache-keying an UPDATE per call
# cost more than running it.
_WORKSPACE_OF_TASK = select(tasks.c.workspace_id).where(tasks.c.id == bindparam("task_id"))
_REVISION_OF_TASK = select(summaries.c.revision).where(summaries.c.task_id == bindparam("task_id"))
_INSERT_SUMMARY = insert(summaries)
_CAS_UPDATE = hot(
    update(summaries)
    .where(
        summaries.c.task_id == bindparam("b_task_id"),
        summaries.c.revision == bindparam("b_expected"),
    )
    .values(
        revision=bindparam("b_revision"),
        summary=bindparam("b_summary", type_=summaries.c.summary.type),
        updated_at=bindparam("b_updated_at", type_=summaries.c.updated_at.type),
    )
)


async def _read_summary(conn: Tx, task_id: str) -> StatusSummary | None:
    row = (await conn.execute(_SUMMARY_OF_TASK, {"task_id": task_id})).first()
    if row is None:
        return None
    return StatusSummary(
        task_id=row.task_id, revision=row.revision, data=row.summary, updated_at=row.updated_at
    )


class SummaryQueries(StoreBase):
    async def find_summary(self, task_id: str) -> StatusSummary | None:
        async with self._db.read_one() as conn:
            return await _read_summary(conn, task_id)

    async def summary_inputs(self, task_id: str) -> SummaryInputs:
        async with self._db.read() as conn:
            summary = await _read_summary(conn, task_id)
            sessions = tuple(
                to_session(row)
                for row in await conn.execute(SESSIONS_OF_TASK, {"task_id": task_id})
            )
            actions = await read_pending_actions(conn, [s.id for s in sessions])
        return SummaryInputs(summary=summary, sessions=sessions, actions=actions)

    async def cas_summary(
        self, task_id: str, *, expected_revision: int | None, data: Mapping[str, Any]
    ) -> StatusSummary | None:
        # The caller passes the whole merged dict: keys it does not own are already in it.
        now = self._clock.now()
        payload = dict(data)
        try:
            async with self._db.write() as conn:
                if expected_revision is None:
                    workspace_id = (
                        await conn.execute(_WORKSPACE_OF_TASK, {"task_id": task_id})
                    ).scalar()
                    if workspace_id is None:
                        raise NotFound("task not found", task_id=task_id)
                    exists = (await conn.execute(_REVISION_OF_TASK, {"task_id": task_id})).first()
                    if exists is not None:
                        return None
                    revision = 1
                    await conn.execute(
                        _INSERT_SUMMARY,
                        {
                            "task_id": task_id,
                            "workspace_id": workspace_id,
                            "revision": revision,
                            "summary": payload,
                            "updated_at": now,
                        },
                    )
                else:
                    revision = expected_revision + 1
                    result = await conn.execute(
                        _CAS_UPDATE,
                        {
                            "b_task_id": task_id,
                            "b_expected": expected_revision,
                            "b_revision": revision,
                            "b_summary": payload,
                            "b_updated_at": now,
                        },
                    )
                    if result.rowcount != 1:
                        return None
        except IntegrityError:
            # A concurrent first write won the insert race (PostgreSQL); same as a lost CAS.
            return None
        return StatusSummary(task_id=task_id, revision=revision, data=payload, updated_at=now)
