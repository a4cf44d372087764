"""SqlSlack: the Slack channel's records (`clarion.ports.slack.SlackStore`) on SQL: where each
question's message is, and the durable queue of clicks and modal submissions."""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import exists, insert, or_, select, true, update
from sqlalchemy.exc import IntegrityError

from clarion.domain.models import Workspace
from clarion.domain.slack import SlackInteraction, SlackMessage
from clarion.ports import Clock
from clarion.store.db.engine import Db
from clarion.store.db.schema import (
    slack_interactions,
    slack_messages,
    task_session_messages,
    task_sessions,
    users,
    workspace_members,
    workspaces,
)

log = logging.getLogger(__name__)

_SESSIONS_PER_STATEMENT = 500


def _message(row: Any) -> SlackMessage:
    return SlackMessage(
        pending_id=row.pending_id,
        channel_key=row.channel_key,
        channel=row.channel,
        ts=row.ts,
        task_id=row.task_id,
        session_id=row.session_id,
        posted_at=row.posted_at,
        body=row.body,
        closed_at=row.closed_at,
    )


def _interaction(row: Any) -> SlackInteraction:
    return SlackInteraction(
        id=row.id,
        pending_id=row.pending_id,
        slack_user=row.slack_user,
        user=row.user_name,
        channel=row.channel,
        message_ts=row.message_ts,
        body=row.body,
        attempts=row.attempts,
        done_at=row.done_at,
        outcome=row.outcome,
    )


def _owned(owner: str | None, pending_id: Any) -> Any:
    """Rows of questions whose session replica `owner` runs (every row when None)."""
    if owner is None:
        return true()
    return exists(
        select(task_session_messages.c.id)
        .select_from(
            task_session_messages.join(
                task_sessions, task_sessions.c.id == task_session_messages.c.task_session_id
            )
        )
        .where(
            task_session_messages.c.pending_id == pending_id,
            task_sessions.c.owner_replica_id == owner,
        )
    )


def _of_sessions(session_ids: Collection[str], pending_id: Any) -> Any:
    """Rows of questions asked in one of `session_ids`."""
    return exists(
        select(task_session_messages.c.id).where(
            task_session_messages.c.pending_id == pending_id,
            task_session_messages.c.task_session_id.in_(session_ids),
        )
    )


class SqlSlack:
    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def find_slack_message(self, pending_id: str) -> SlackMessage | None:
        query = select(slack_messages).where(slack_messages.c.pending_id == pending_id)
        async with self._db.read_one() as conn:
            row = (await conn.execute(query)).first()
        return None if row is None else _message(row)

    async def record_slack_message(self, message: SlackMessage) -> bool:
        values = {
            "pending_id": message.pending_id,
            "channel_key": message.channel_key,
            "channel": message.channel,
            "ts": message.ts,
            "task_id": message.task_id,
            "session_id": message.session_id,
            "posted_at": message.posted_at,
            "body": message.body,
        }
        try:
            async with self._db.write() as conn:
                await conn.execute(insert(slack_messages).values(**values))
        except IntegrityError:
            return False
        log.info(
            "slack message recorded",
            extra={"pending_id": message.pending_id, "channel": message.channel, "ts": message.ts},
        )
        return True

    async def open_slack_messages(self, owner: str | None, limit: int) -> list[SlackMessage]:
        query = (
            select(slack_messages)
            .where(
                slack_messages.c.closed_at.is_(None),
                _owned(owner, slack_messages.c.pending_id),
            )
            .order_by(slack_messages.c.posted_at, slack_messages.c.pending_id)
            .limit(limit)
        )
        async with self._db.read() as conn:
            return [_message(row) for row in await conn.execute(query)]

    async def close_slack_message(self, pending_id: str, outcome: str) -> bool:
        statement = (
            update(slack_messages)
            .where(slack_messages.c.pending_id == pending_id, slack_messages.c.closed_at.is_(None))
            .values(closed_at=self._clock.now(), outcome=outcome)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def claim_slack_close(
        self, pending_id: str, *, now: datetime, lease_until: datetime
    ) -> bool:
        c = slack_messages.c
        statement = (
            update(slack_messages)
            .where(
                c.pending_id == pending_id,
                c.closed_at.is_(None),
                or_(c.close_lease_until.is_(None), c.close_lease_until <= now),
            )
            .values(close_lease_until=lease_until)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def release_slack_close(self, pending_id: str, *, lease_until: datetime) -> bool:
        c = slack_messages.c
        statement = (
            update(slack_messages)
            .where(
                c.pending_id == pending_id,
                c.closed_at.is_(None),
                c.close_lease_until == lease_until,
            )
            .values(close_lease_until=None)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def queue_slack_interaction(self, interaction: SlackInteraction) -> bool:
        now = self._clock.now()
        values = {
            "id": interaction.id,
            "pending_id": interaction.pending_id,
            "slack_user": interaction.slack_user,
            "user_name": interaction.user,
            "channel": interaction.channel,
            "message_ts": interaction.message_ts,
            "body": interaction.body,
            "received_at": now,
            "attempts": 0,
            "next_attempt_at": now,
        }
        try:
            async with self._db.write() as conn:
                exists = (
                    await conn.execute(
                        select(slack_interactions.c.id).where(
                            slack_interactions.c.id == interaction.id
                        )
                    )
                ).first()
                if exists is not None:
                    return False
                await conn.execute(insert(slack_interactions).values(**values))
        except IntegrityError:  # a concurrent retry inserted it first (PostgreSQL)
            return False
        return True

    async def due_slack_interactions(
        self, owner: str | None, now: datetime, limit: int
    ) -> list[SlackInteraction]:
        query = (
            select(slack_interactions)
            .where(
                slack_interactions.c.done_at.is_(None),
                slack_interactions.c.next_attempt_at <= now,
                _owned(owner, slack_interactions.c.pending_id),
            )
            .order_by(slack_interactions.c.next_attempt_at, slack_interactions.c.id)
            .limit(limit)
        )
        async with self._db.read() as conn:
            return [_interaction(row) for row in await conn.execute(query)]

    async def claim_slack_interaction(
        self, interaction_id: str, *, attempts_before: int, now: datetime, lease_until: datetime
    ) -> bool:
        statement = (
            update(slack_interactions)
            .where(
                slack_interactions.c.id == interaction_id,
                slack_interactions.c.attempts == attempts_before,
                slack_interactions.c.next_attempt_at <= now,
                slack_interactions.c.done_at.is_(None),
            )
            .values(next_attempt_at=lease_until, attempts=attempts_before + 1)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def finish_slack_interaction(
        self, interaction_id: str, *, outcome: str, detail: str | None = None
    ) -> bool:
        statement = (
            update(slack_interactions)
            .where(
                slack_interactions.c.id == interaction_id, slack_interactions.c.done_at.is_(None)
            )
            .values(done_at=self._clock.now(), outcome=outcome, detail=detail)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def release_slack_claims(self, owner: str | None, now: datetime) -> int:
        statement = (
            update(slack_interactions)
            .where(
                slack_interactions.c.done_at.is_(None),
                slack_interactions.c.next_attempt_at > now,
                _owned(owner, slack_interactions.c.pending_id),
            )
            .values(next_attempt_at=now)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        released = int(result.rowcount or 0)
        if released:
            log.info("slack interactions released at start", extra={"released": released})
        return released

    async def release_slack_claims_of_sessions(
        self, session_ids: Collection[str], now: datetime
    ) -> int:
        ids = sorted(set(session_ids))
        if not ids:
            return 0
        c = slack_interactions.c
        released = 0
        async with self._db.write() as conn:
            # In slices: a replica may adopt more sessions than a statement takes parameters.
            for start in range(0, len(ids), _SESSIONS_PER_STATEMENT):
                statement = (
                    update(slack_interactions)
                    .where(
                        c.done_at.is_(None),
                        c.next_attempt_at > now,
                        _of_sessions(ids[start : start + _SESSIONS_PER_STATEMENT], c.pending_id),
                    )
                    .values(next_attempt_at=now)
                )
                released += int((await conn.execute(statement)).rowcount or 0)
        return released

    async def retry_slack_interaction(
        self, interaction_id: str, *, next_attempt_at: datetime, error: str
    ) -> bool:
        statement = (
            update(slack_interactions)
            .where(
                slack_interactions.c.id == interaction_id, slack_interactions.c.done_at.is_(None)
            )
            .values(next_attempt_at=next_attempt_at, detail=error[:500])
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return bool(result.rowcount)

    async def slack_interactions_of(self, pending_id: str) -> list[SlackInteraction]:
        query = (
            select(slack_interactions)
            .where(slack_interactions.c.pending_id == pending_id)
            .order_by(slack_interactions.c.received_at, slack_interactions.c.id)
        )
        async with self._db.read() as conn:
            return [_interaction(row) for row in await conn.execute(query)]

    async def user_workspaces(self, user: str) -> tuple[Workspace, ...] | None:
        async with self._db.read() as conn:
            found = (await conn.execute(select(users.c.id).where(users.c.name == user))).first()
            if found is None:
                return None
            query = (
                select(workspaces.c.id, workspaces.c.name)
                .select_from(
                    workspace_members.join(
                        workspaces, workspaces.c.id == workspace_members.c.workspace_id
                    )
                )
                .where(workspace_members.c.user_id == found[0])
                .order_by(workspace_members.c.created_at, workspaces.c.id)
            )
            rows = list(await conn.execute(query))
        return tuple(Workspace(id=str(r[0]), name=str(r[1])) for r in rows)
