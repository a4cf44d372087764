"""Users, workspace memberships and API tokens: what `SqlAccess` writes and reads them with.

Tokens are looked up by their SHA-256 hash (a unique index), so the plain token never reaches
the database and the lookup is one indexed equality.
"""

from __future__ import annotations

from sqlalchemy import select

from clarion.domain.models import Workspace
from clarion.store.db.row_conversion import to_workspace
from clarion.store.db.schema import workspace_members, workspaces
from clarion.store.db.transactions import Tx


async def read_memberships(conn: Tx, user_id: str) -> tuple[Workspace, ...]:
    query = (
        select(workspaces)
        .join(workspace_members, workspace_members.c.workspace_id == workspaces.c.id)
        .where(workspace_members.c.user_id == user_id)
        .order_by(workspace_members.c.created_at, workspaces.c.name)
    )
    return tuple(to_workspace(row) for row in await conn.execute(query))
