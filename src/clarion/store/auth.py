"""Users, workspace memberships and API tokens. Imported only by the SqlStore facade.

Tokens are looked up by their SHA-256 hash (a unique index), so the plain token never reaches
the database and the lookup is one indexed equality.
"""

from __future__ import annotations

from sqlalchemy import insert, select

from clarion.domain.ids import new_id
from clarion.domain.models import Workspace
from clarion.ports import TokenOwner
from clarion.store.db.row_conversion import StoreBase, to_workspace
from clarion.store.db.schema import api_tokens, users, workspace_members, workspaces
from clarion.store.db.transactions import Tx


async def _memberships(conn: Tx, user_id: str) -> tuple[Workspace, ...]:
    query = (
        select(workspaces)
        .join(workspace_members, workspace_members.c.workspace_id == workspaces.c.id)
        .where(workspace_members.c.user_id == user_id)
        .order_by(workspace_members.c.created_at, workspaces.c.name)
    )
    return tuple(to_workspace(row) for row in await conn.execute(query))


class AuthQueries(StoreBase):
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
                user_id=user_id, user_name=user, workspaces=await _memberships(conn, user_id)
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
                user_id=row.id, user_name=row.name, workspaces=await _memberships(conn, row.id)
            )
