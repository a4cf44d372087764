"""RecoveryStore: startup recovery's steps, each scoped to the sessions it may act on.

Built and composed by `clarion.store.sql_store.SqlStore`; what it needs it is given.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence

from sqlalchemy import select

from clarion.domain.lifecycle import (
    DETACH,
    MARK_UNREAD,
    RELEASE_RESEND,
    Transition,
)
from clarion.domain.models import (
    Message,
    MetaKey,
    Session,
    SessionState,
    Turn,
)
from clarion.domain.permissions import PermissionStatus, status_of
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.domain.turn_outcomes import TurnOutcome
from clarion.ports import (
    ChangedBundle,
    Clock,
    IntentRecovery,
    ReservationRecovery,
)
from clarion.store.answer_statements import pending_id_of
from clarion.store.bundle_rows import (
    rewrite,
    select_rows,
)
from clarion.store.db.engine import Db
from clarion.store.db.row_conversion import to_message, to_session
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_sessions
from clarion.store.lifecycle_guards import guard
from clarion.store.outbox import OutboxWriter
from clarion.store.pending_actions import chunks
from clarion.store.permission_rows import (
    IN_OPEN_TURNS,
    settle_requests,
)
from clarion.store.resends import AGENT_SPOKE_AFTER, OPEN_TURN_IDS
from clarion.store.startup import (
    intents,
    open_turns,
    orphans,
    reservation_recovery,
    sessions,
    start_events,
)

log = logging.getLogger(__name__)
# The rows each startup transition may act on, by its guard: every resend in flight; the
# delivered answers (of the open turns the step then narrows to) not resent already.
_RELEASABLE = guard(RELEASE_RESEND)
_UNREAD_CANDIDATES = guard(MARK_UNREAD)


class SqlRecovery:
    """`clarion.ports.store.recovery.RecoveryStore` on SQL (`Lookups`: `SqlLookups`)."""

    def __init__(self, db: Db, clock: Clock, outbox: OutboxWriter) -> None:
        self._db = db
        self._clock = clock
        self._outbox = outbox

    async def reconcile_reservations(
        self, *, scope: SessionScope = EVERY_SESSION
    ) -> list[ReservationRecovery]:
        return await reservation_recovery.reconcile_reservations(self._db, self._clock, scope=scope)

    async def reconcile_intents(
        self, *, scope: SessionScope = EVERY_SESSION
    ) -> list[IntentRecovery]:
        return await intents.reconcile_intents(self._db, self._clock, scope=scope)

    async def _release_resends(self, scope: SessionScope) -> tuple[ChangedBundle, ...]:
        async with self._db.write() as conn:
            rows = scope.pick(await select_rows(conn, _RELEASABLE), lambda r: r.session_id)
            await self._db.lock_sessions(conn, [r.session_id for r in rows])
            released = await rewrite(conn, rows, RELEASE_RESEND)
        return _by_bundle(released)

    async def _mark_unread(self, scope: SessionScope) -> tuple[ChangedBundle, ...]:
        async with self._db.write() as conn:
            await self._db.lock_key(conn, "clarion-startup-recovery")
            open_turns = [str(t) for t in (await conn.execute(OPEN_TURN_IDS)).scalars()]
            delivered: list[Message] = []
            for part in chunks(open_turns):
                delivered.extend(
                    await select_rows(conn, _UNREAD_CANDIDATES, messages.c.turn_id.in_(part))
                )
            by_bundle: dict[tuple[str, str], list[Message]] = {}
            for row in scope.pick(delivered, lambda r: r.session_id):
                key = (row.turn_id or "", str(row.metadata.get(MetaKey.PENDING_ID, "")))
                by_bundle.setdefault(key, []).append(row)
            unread: list[Message] = []
            for (turn_id, _), rows in sorted(by_bundle.items()):
                answered_at = max(r.updated_at for r in rows)
                spoke = await conn.execute(
                    AGENT_SPOKE_AFTER, {"turn_id": turn_id, "after": answered_at}
                )
                if spoke.first() is None:
                    unread.extend(rows)
            await self._db.lock_sessions(conn, [r.session_id for r in unread])
            marked = await rewrite(conn, unread, MARK_UNREAD)
        return _by_bundle(marked)

    async def expire_stale_permissions(
        self, *, reason: str, scope: SessionScope = EVERY_SESSION
    ) -> tuple[Message, ...]:
        """Startup: every request a previous process left pending -> expired."""
        now = self._clock.now()
        async with self._db.write() as conn:
            rows = [to_message(r) for r in await conn.execute(IN_OPEN_TURNS)]
            pending = [
                r
                for r in scope.pick(rows, lambda r: r.session_id)
                if status_of(r) is PermissionStatus.PENDING
            ]
            await self._db.lock_sessions(conn, [r.session_id for r in pending])
            return await settle_requests(conn, pending, PermissionStatus.EXPIRED, reason, now)

    async def list_start_marked_turns(self, *, scope: SessionScope = EVERY_SESSION) -> list[Turn]:
        return await start_events.list_start_marked_turns(self._db, scope=scope)

    async def clear_start_markers(self, turn_ids: Sequence[str]) -> list[str]:
        return await start_events.clear_start_markers(self._db, self._clock, turn_ids)

    async def _detach_all(self, scope: SessionScope) -> tuple[ChangedBundle, ...]:
        return await orphans.detach_all_bundles(self._db, self._clock, self._outbox, scope=scope)

    async def transition_all_bundles(
        self, transition: Transition, *, scope: SessionScope = EVERY_SESSION
    ) -> tuple[ChangedBundle, ...]:
        # The startup transitions of every bundle, each with its step.
        steps: Mapping[
            Transition, Callable[[SessionScope], Awaitable[tuple[ChangedBundle, ...]]]
        ] = {
            DETACH: self._detach_all,
            RELEASE_RESEND: self._release_resends,
            MARK_UNREAD: self._mark_unread,
        }
        step = steps.get(transition)
        if step is None:
            raise ValueError(f"{transition} is not a startup transition of every bundle")
        return await step(scope)

    async def complete_open_turns(
        self,
        *,
        outcome: TurnOutcome,
        scope: SessionScope = EVERY_SESSION,
    ) -> list[Turn]:
        return await open_turns.complete_open_turns(
            self._db, self._clock, outcome=outcome, scope=scope
        )

    async def list_sessions_in_states(self, states: Sequence[SessionState]) -> list[Session]:
        query = (
            select(task_sessions)
            .where(task_sessions.c.state.in_([s.value for s in states]))
            .order_by(task_sessions.c.created_at, task_sessions.c.id)
        )
        async with self._db.read() as conn:
            return [to_session(row) for row in await conn.execute(query)]

    async def transition_sessions(
        self,
        session_ids: Sequence[str],
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> list[str]:
        return await sessions.transition_sessions(
            self._db, self._clock, session_ids, to, allowed_from=allowed_from
        )


def _by_bundle(changed: Sequence[Message]) -> tuple[ChangedBundle, ...]:
    """The bundles these rows belong to, by pending id, with how many of their rows changed."""
    counts = Counter((pending_id_of(r), r.session_id, r.task_id) for r in changed)
    return tuple(
        ChangedBundle(session_id=sid, task_id=tid, pending_id=pid, rows=n)
        for (pid, sid, tid), n in sorted(counts.items())
    )
