"""Task status summaries: caches written by compare-and-set on their revision.

Imported only by the SqlStore facade.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from clarion.domain.errors import NotFound
from clarion.domain.models import StatusSummary
from clarion.store.rows import StoreBase
from clarion.store.schema import task_status_summaries, tasks

log = logging.getLogger(__name__)
summaries = task_status_summaries


class SummaryQueries(StoreBase):
    async def find_summary(self, task_id: str) -> StatusSummary | None:
        async with self._db.read() as conn:
            row = (
                await conn.execute(select(summaries).where(summaries.c.task_id == task_id))
            ).first()
        if row is None:
            return None
        return StatusSummary(
            task_id=row.task_id, revision=row.revision, data=row.summary, updated_at=row.updated_at
        )

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
                        await conn.execute(
                            select(tasks.c.workspace_id).where(tasks.c.id == task_id)
                        )
                    ).scalar()
                    if workspace_id is None:
                        raise NotFound("task not found", task_id=task_id)
                    exists = (
                        await conn.execute(
                            select(summaries.c.revision).where(summaries.c.task_id == task_id)
                        )
                    ).first()
                    if exists is not None:
                        return None
                    revision = 1
                    await conn.execute(
                        insert(summaries).values(
                            task_id=task_id,
                            workspace_id=workspace_id,
                            revision=revision,
                            summary=payload,
                            updated_at=now,
                        )
                    )
                else:
                    revision = expected_revision + 1
                    result = await conn.execute(
                        update(summaries)
                        .where(
                            summaries.c.task_id == task_id,
                            summaries.c.revision == expected_revision,
                        )
                        .values(revision=revision, summary=payload, updated_at=now)
                    )
                    if result.rowcount != 1:
                        return None
        except IntegrityError:
            # A concurrent first write won the insert race (PostgreSQL); same as a lost CAS.
            return None
        return StatusSummary(task_id=task_id, revision=revision, data=payload, updated_at=now)
