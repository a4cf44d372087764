"""ReadStore: what clients read (tasks, transcripts, pending projections, summaries) and
the projection's epochs and revisions.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import and_, func, insert, not_, or_, select, update
from sqlalchemy.exc import IntegrityError

from clarion.domain.errors import NotFound
from clarion.domain.models import (
    MetaKey,
    PendingAction,
    Revision,
    StatusSummary,
    Task,
    Turn,
    Workspace,
)
from clarion.ports import Clock, InboxEntry, MessagePage, SummaryInputs
from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import flag
from clarion.store.db.predicates import (
    referenced,
)
from clarion.store.db.row_conversion import to_message, to_task, to_turn, to_workspace
from clarion.store.db.schema import kandev_meta, tasks, workspaces
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.inbox import (
    read_escalated,
    read_inbox,
)
from clarion.store.messages import (
    read_message,
)
from clarion.store.pending_actions import read_pending_actions
from clarion.store.projection_epoch import EPOCH_KEY, stored_epoch
from clarion.store.revisions import RESERVE, SharedRevisionsNeedPostgres, newest_epoch
from clarion.store.summaries import (
    _CAS_UPDATE,
    INSERT_SUMMARY,
    REVISION_OF_TASK,
    WORKSPACE_OF_TASK,
    read_summary,
)
from clarion.store.summary_inputs import read_summary_inputs
from clarion.store.turn_rows import (
    public,
)

log = logging.getLogger(__name__)


class SqlReads:
    """`clarion.ports.store.reads.ReadStore` on SQL (`Lookups`: `SqlLookups`)."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def get_workspace(self, workspace_id: str) -> Workspace:
        query = select(workspaces).where(workspaces.c.id == workspace_id)
        async with self._db.read() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            raise NotFound("workspace not found", workspace_id=workspace_id)
        return to_workspace(row)

    async def list_tasks(self, workspace_ids: Sequence[str] | None = None) -> list[Task]:
        query = select(tasks).order_by(tasks.c.created_at, tasks.c.id)
        if workspace_ids is not None:
            query = query.where(tasks.c.workspace_id.in_(list(workspace_ids)))
        async with self._db.read() as conn:
            return [to_task(row) for row in await conn.execute(query)]

    async def list_visible_turns(self, session_id: str) -> list[Turn]:
        # An unpublished reservation stays hidden even once attempted; only a message in it
        # (durable evidence that the prompt may have run) makes it history.
        visible = or_(
            not_(flag(turns.c.metadata, MetaKey.PROMPT_DISPATCH_PENDING)), referenced(turns.c.id)
        )
        query = (
            select(turns)
            .where(turns.c.task_session_id == session_id, visible)
            .order_by(turns.c.started_at, turns.c.created_at, turns.c.id)
        )
        async with self._db.read() as conn:
            rows = [to_turn(row) for row in await conn.execute(query)]
        return [public(turn) for turn in rows]

    async def list_messages(
        self, session_id: str, *, after: str | None = None, limit: int = 100
    ) -> MessagePage:
        limit = max(1, limit)
        in_session = messages.c.task_session_id == session_id
        query = select(messages).where(in_session)
        async with self._db.read() as conn:
            if after is not None:
                anchor = await read_message(conn, after)
                if anchor is None or anchor.session_id != session_id:
                    raise NotFound("message not found", message_id=after)
                query = query.where(
                    or_(
                        messages.c.created_at > anchor.created_at,
                        and_(messages.c.created_at == anchor.created_at, messages.c.id > after),
                    )
                )
            query = query.order_by(messages.c.created_at, messages.c.id).limit(limit + 1)
            rows = [to_message(row) for row in await conn.execute(query)]
            total = (
                await conn.execute(select(func.count()).select_from(messages).where(in_session))
            ).scalar_one()
        page = tuple(rows[:limit])
        next_after = page[-1].id if len(rows) > limit else None
        return MessagePage(messages=page, total=int(total), next_after=next_after)

    async def pending_actions(self, session_ids: Sequence[str]) -> dict[str, PendingAction | None]:
        if not session_ids:
            return {}
        async with self._db.read() as conn:
            return await read_pending_actions(conn, session_ids)

    async def inbox_entries(
        self, workspace_ids: Sequence[str] | None = None, escalated_to: str | None = None
    ) -> list[InboxEntry]:
        async with self._db.read() as conn:
            entries = await read_inbox(conn, workspace_ids)
            if escalated_to is None or workspace_ids is None:
                return entries
            seen = {e.id for e in entries}
            entries.extend(e for e in await read_escalated(conn, escalated_to) if e.id not in seen)
        entries.sort(key=lambda e: (e.created_at, e.id))
        return entries

    async def find_summary(self, task_id: str) -> StatusSummary | None:
        async with self._db.read_one() as conn:
            return await read_summary(conn, task_id)

    async def summary_inputs(self, task_id: str) -> SummaryInputs:
        # One statement, so one snapshot: no transaction around it.
        async with self._db.read_one() as conn:
            return await read_summary_inputs(conn, task_id)

    async def cas_summary(
        self, task_id: str, *, expected_revision: int | None, data: Mapping[str, Any]
    ) -> StatusSummary | None:
        # The caller passes the whole merged dict: keys it does not own are already in it.
        now = self._clock.now()
        payload = dict(data)
        try:
            # One change (the insert or the compare-and-set) and no lock: see `write_one`.
            async with self._db.write_one() as conn:
                if expected_revision is None:
                    workspace_id = (
                        await conn.execute(WORKSPACE_OF_TASK, {"task_id": task_id})
                    ).scalar()
                    if workspace_id is None:
                        raise NotFound("task not found", task_id=task_id)
                    exists = (await conn.execute(REVISION_OF_TASK, {"task_id": task_id})).first()
                    if exists is not None:
                        return None
                    revision = 1
                    await conn.execute(
                        INSERT_SUMMARY,
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

    async def next_epoch(self) -> int:
        epoch = await self._increment(EPOCH_KEY)
        log.info("projection epoch allocated", extra={"epoch": epoch})
        return epoch

    async def _increment(self, key: str) -> int:
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "kandev-meta:" + key)
            query = select(kandev_meta.c.value).where(kandev_meta.c.key == key)
            raw = (await conn.execute(query)).scalar()
            if raw is None:
                epoch = 1
                await conn.execute(insert(kandev_meta).values(key=key, value=str(epoch)))
            else:
                epoch = stored_epoch(key, raw) + 1
                await conn.execute(
                    update(kandev_meta).where(kandev_meta.c.key == key).values(value=str(epoch))
                )
        return epoch

    async def reserve_revision(self) -> Revision:
        if not self._db.is_postgres:
            raise SharedRevisionsNeedPostgres(
                "shared pending revisions need PostgreSQL (cluster mode); "
                "SQLite has no clarion_pending_revision sequence"
            )
        async with self._db.read_one() as conn:
            row = (await conn.execute(RESERVE, {"key": EPOCH_KEY})).one()
        return Revision(epoch=newest_epoch(row.epoch), sequence=int(row.sequence))
