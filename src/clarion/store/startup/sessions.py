"""Sessions moved, as a batch, to the state their rows call for after recovery (a guarded
update: only sessions still in an allowed state move)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import update

from clarion.domain.models import SessionState
from clarion.ports import Clock
from clarion.store.db.engine import Db
from clarion.store.db.schema import task_sessions
from clarion.store.pending_actions import chunks
from clarion.store.tasks import NON_TERMINAL


async def transition_sessions(
    db: Db,
    clock: Clock,
    session_ids: Sequence[str],
    to: SessionState,
    *,
    allowed_from: Sequence[SessionState] | None = None,
) -> list[str]:
    allowed = [s.value for s in (NON_TERMINAL if allowed_from is None else allowed_from)]
    wanted = sorted(set(session_ids))
    moved: list[str] = []
    async with db.write() as conn:
        await db.lock_sessions(conn, wanted)
        for part in chunks(wanted):
            result = await conn.execute(
                update(task_sessions)
                .where(task_sessions.c.id.in_(part), task_sessions.c.state.in_(allowed))
                .values(state=to.value, updated_at=clock.now())
                .returning(task_sessions.c.id)
            )
            moved.extend(str(v) for v in result.scalars())
    return sorted(moved)
