"""AccessStore: API tokens, their owners, and whom a waiting policy escalated a question to.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging

from sqlalchemy import insert, select

from clarion.domain.ids import new_id
from clarion.ports import Clock, TokenOwner
from clarion.store.auth import read_memberships
from clarion.store.db.engine import Db
from clarion.store.db.schema import api_tokens, users, workspace_members, workspaces
from clarion.store.db.schema import clarification_deadlines as deadlines

log = logging.getLogger(__name__)


class SqlAccess:
    """`clarion.ports.store.access.AccessStore` on SQL (`Lookups`: `SqlLookups`)."""

    def __init__(self, db: Db, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def issue_api_token(self, *, user: str, workspace: str, token_hash: str) -> TokenOwner:
        now = self._clock.now()
        async with self._db.write() as conn:
            # The same keys ensure_workspace takes, so a concurrent task creation in the same
            # workspace and a second token command cannot insert the name twice.
            await self._db.lock_key(conn, "workspace:" + workspace)
            await self._db.lock_key(conn, "user:" + user)
            user_id = (await conn.execute(select(users.c.id).where(users.c.name == user))).scalar()
            if user_id is None:
                user_id = new_id()
                await conn.execute(insert(users).values(id=user_id, name=user, created_at=now))
            workspace_id = (
                await conn.execute(select(workspaces.c.id).where(workspaces.c.name == workspace))
            ).scalar()
            if workspace_id is None:
                workspace_id = new_id()
                await conn.execute(
                    insert(workspaces).values(id=workspace_id, name=workspace, created_at=now)
                )
            member = (
                await conn.execute(
                    select(workspace_members.c.user_id).where(
                        workspace_members.c.user_id == user_id,
                        workspace_members.c.workspace_id == workspace_id,
                    )
                )
            ).first()
            if member is None:
                await conn.execute(
                    insert(workspace_members).values(
                        workspace_id=workspace_id, user_id=user_id, created_at=now
                    )
                )
            await conn.execute(
                insert(api_tokens).values(
                    id=new_id(), user_id=user_id, token_hash=token_hash, created_at=now
                )
            )
            return TokenOwner(
                user_id=user_id, user_name=user, workspaces=await read_memberships(conn, user_id)
            )

    async def find_token_owner(self, token_hash: str) -> TokenOwner | None:
        query = (
            select(users.c.id, users.c.name)
            .join(api_tokens, api_tokens.c.user_id == users.c.id)
            .where(api_tokens.c.token_hash == token_hash)
        )
        async with self._db.read() as conn:
            row = (await conn.execute(query)).first()
            if row is None:
                return None
            return TokenOwner(
                user_id=row.id, user_name=row.name, workspaces=await read_memberships(conn, row.id)
            )

    async def escalated_users(self, pending_id: str) -> tuple[str, ...]:
        query = select(deadlines.c.escalate_to).where(
            deadlines.c.pending_id == pending_id, deadlines.c.escalated_at.is_not(None)
        )
        async with self._db.read_one() as conn:
            value = (await conn.execute(query)).scalar()
        users = value.get("users", []) if isinstance(value, dict) else []
        return tuple(str(u) for u in users)
