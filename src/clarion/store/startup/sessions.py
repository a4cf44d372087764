"""Sessions moved, as a batch, to the state their rows call for after recovery (a guarded
update: only sessions still in an allowed state move)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import update

from clarion.domain.models import SessionState
from clarion.store.db.row_conversion import StoreBase
from clarion.store.db.schema import task_sessions
from clarion.store.pending_actions import chunks
from clarion.store.tasks import NON_TERMINAL


class SessionStateQueries(StoreBase):
    async def transition_sessions(
        self,
        session_ids: Sequence[str],
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> list[str]:
        allowed = [s.value for s in (NON_TERMINAL if allowed_from is None else allowed_from)]
        wanted = sorted(set(session_ids))
        moved: list[str] = []
        async with self._db.write() as conn:
            await self._db.lock_sessions(conn, wanted)
            for part in chunks(wanted):
                result = await conn.execute(
                    update(task_sessions)
                    .where(task_sessions.c.id.in_(part), task_sessions.c.state.in_(allowed))
                    .values(state=to.value, updated_at=self._clock.now())
                    .returning(task_sessions.c.id)
                )
                moved.extend(str(v) for v in result.scalars())
        return sorted(moved)
