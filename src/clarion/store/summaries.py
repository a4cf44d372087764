"""Task status summaries: caches written by compare-and-set on their revision.

Used by the port implementations beside it (store-internal).
"""

from __future__ import annotations

import logging

from sqlalchemy import bindparam, insert, select, update

from clarion.domain.models import StatusSummary
from clarion.store.db.fastpath import hot
from clarion.store.db.schema import task_status_summaries, tasks
from clarion.store.db.transactions import Tx

log = logging.getLogger(__name__)
summaries = task_status_summaries


_SUMMARY_OF_TASK = hot(select(summaries).where(summaries.c.task_id == bindparam("task_id")))
# The compare-and-set statements, built once: building and cache-keying an UPDATE per call
# cost more than running it.
WORKSPACE_OF_TASK = select(tasks.c.workspace_id).where(tasks.c.id == bindparam("task_id"))
REVISION_OF_TASK = select(summaries.c.revision).where(summaries.c.task_id == bindparam("task_id"))
INSERT_SUMMARY = insert(summaries)
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


async def read_summary(conn: Tx, task_id: str) -> StatusSummary | None:
    row = (await conn.execute(_SUMMARY_OF_TASK, {"task_id": task_id})).first()
    if row is None:
        return None
    return StatusSummary(
        task_id=row.task_id, revision=row.revision, data=row.summary, updated_at=row.updated_at
    )
