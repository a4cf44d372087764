"""Startup reconciliation, run before any event processing or prompt admission.

In order: a new projection epoch; unpublished successor reservations; response-delivery
intents no reservation owns; the start events of kept turns still marked; bundles that lost
their live waiter; permission requests the previous process left pending (expired, never
re-sent: the agent call that made them is gone); turns the previous process left open; last,
task worktrees (`git worktree prune`, and every worktree row a kill left `creating` or whose
worktree is gone is repaired: orchestrator/worktrees.py). Every step is a query that is
harmless to run twice, and any failure aborts startup: nothing may supersede an unrecovered
claim.

A scope narrows every step to some sessions (a cluster replica adopting a dead replica's
sessions recovers those and leaves the ones live replicas run alone); a server's own startup
recovers every session.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from clarion.domain.lifecycle import DETACH, MARK_UNREAD, RELEASE_RESEND
from clarion.domain.models import SessionState
from clarion.domain.scope import EVERY_SESSION, SessionScope
from clarion.domain.turn_outcomes import TurnOutcome
from clarion.orchestrator.permissions import SERVER_RESTARTED
from clarion.orchestrator.worktrees import TaskWorktrees
from clarion.ports import ChangedBundle, RecoveryStore
from clarion.ports.metrics import NO_METRICS, Metrics
from clarion.projection.events import EventPublisher
from clarion.projection.pending import PendingProjector
from clarion.runtime import failpoints

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    epoch: int
    reservations_kept: int
    reservations_rolled_back: int
    intents_restored: int
    intents_retired: int
    starts_replayed: int
    bundles_detached: int
    turns_interrupted: int
    permissions_expired: int = 0
    worktrees_repaired: int = 0


class StartupRecovery:
    def __init__(
        self,
        store: RecoveryStore,
        projector: PendingProjector,
        publisher: EventPublisher,
        metrics: Metrics = NO_METRICS,
        worktrees: TaskWorktrees | None = None,
    ) -> None:
        self._worktrees = worktrees
        self._metrics = metrics
        self._store = store
        self._projector = projector
        self._publisher = publisher

    async def run(self, scope: SessionScope = EVERY_SESSION) -> RecoveryReport:
        epoch = await self._projector.allocate_epoch()
        if scope.session_ids is not None and not scope.session_ids:
            # A cluster replica that adopted nothing: no row can need reconciling.
            log.info("startup: no session to recover", extra={"epoch": epoch})
            return RecoveryReport(epoch, 0, 0, 0, 0, 0, 0, 0)

        await failpoints.hit("startup.reservations")
        reservations = await self._store.reconcile_reservations(scope=scope)
        for r in reservations:
            log.info(
                "startup: reservation reconciled",
                extra={
                    "session_id": r.session_id,
                    "turn_id": r.turn_id,
                    "pending_id": r.pending_id,
                    "kept": r.kept,
                    "delivery": ("ambiguous" if r.ambiguous else "delivered") if r.kept else None,
                    "message_ids": list(r.message_ids),
                },
            )

        await failpoints.hit("startup.intents")
        intents = await self._store.reconcile_intents(scope=scope)
        for i in intents:
            log.info(
                "startup: delivery intent reconciled",
                extra={
                    "session_id": i.session_id,
                    "pending_id": i.pending_id,
                    "restored": i.restored,
                    "message_ids": list(i.message_ids),
                },
            )

        # A resend in flight when the process stopped may or may not have reached the agent,
        # like the dispatch it repeated: those answers read ambiguous again.
        released = await self._store.transition_all_bundles(RELEASE_RESEND, scope=scope)
        for resend in released:
            log.info(
                "startup: resend in flight released; ambiguous again",
                extra={"session_id": resend.session_id, "pending_id": resend.pending_id},
            )

        marked = await self._store.list_start_marked_turns(scope=scope)
        for turn in marked:
            await self._publisher.turn("started", turn)
            if turn.completed_at is not None:
                await self._publisher.turn("completed", turn)
            log.info(
                "startup: turn start replayed from its start marker",
                extra={"session_id": turn.session_id, "turn_id": turn.id},
            )
        # Cleared only after every event went out (one transaction): a failed publication
        # leaves the markers, and the next start replays them (at least once, as before).
        await self._store.clear_start_markers([turn.id for turn in marked])

        # Set-based: one transaction for every orphaned bundle, one summary refresh per task.
        bundles = await self._store.transition_all_bundles(DETACH, scope=scope)
        for bundle in bundles:
            log.info(
                "startup: bundle lost its waiter; detached",
                extra={
                    "session_id": bundle.session_id,
                    "task_id": bundle.task_id,
                    "pending_id": bundle.pending_id,
                    "rows": bundle.rows,
                },
            )
        await self._refresh_summaries(bundles)
        detached = len(bundles)

        # Before the open turns complete: a pending request can only sit in an open turn.
        expired = await self._store.expire_stale_permissions(reason=SERVER_RESTARTED, scope=scope)
        for message in expired:
            log.info(
                "startup: permission request expired",
                extra={
                    "session_id": message.session_id,
                    "task_id": message.task_id,
                    "message_id": message.id,
                    "turn_id": message.turn_id,
                },
            )
        for task_id in sorted({m.task_id for m in expired}):
            await self._publisher.refresh_summary(task_id)

        unread = await self._store.transition_all_bundles(MARK_UNREAD, scope=scope)
        for answer in unread:
            log.info(
                "startup: live answer the agent may not have read; delivery ambiguous",
                extra={"session_id": answer.session_id, "pending_id": answer.pending_id},
            )
        open_turns = await self._store.complete_open_turns(
            outcome=TurnOutcome.INTERRUPTED, scope=scope
        )
        for turn in open_turns:
            log.info(
                "startup: open turn completed as interrupted",
                extra={"session_id": turn.session_id, "turn_id": turn.id},
            )
            await self._publisher.turn_quietly("completed", turn)
        await self._settle_sessions(scope)
        repaired = 0
        if self._worktrees is not None:
            ids = None if scope.session_ids is None else sorted(scope.session_ids)
            repaired = await self._worktrees.reconcile(ids)

        report = RecoveryReport(
            epoch=epoch,
            reservations_kept=sum(r.kept for r in reservations),
            reservations_rolled_back=sum(not r.kept for r in reservations),
            intents_restored=sum(i.restored for i in intents),
            intents_retired=sum(not i.restored for i in intents),
            starts_replayed=len(marked),
            bundles_detached=detached,
            turns_interrupted=len(open_turns),
            permissions_expired=len(expired),
            worktrees_repaired=repaired,
        )
        self._metrics.ambiguous_deliveries(
            sum(r.kept and r.ambiguous for r in reservations) + len(released) + len(unread)
        )
        sessions = "every" if scope.session_ids is None else len(scope.session_ids)
        log.info("startup recovery finished", extra={"report": report, "sessions": sessions})
        return report

    async def _refresh_summaries(self, changed: Sequence[ChangedBundle]) -> None:
        """One summary refresh per affected task instead of a `session.message.updated` per
        row. Nothing can observe per-row events yet: until recovery is done the readiness
        gate refuses every WebSocket, and clients read afresh once they connect (events are
        triggers for reads, never pending truth). The summary refresh publishes its own
        change, so a summary left stale by the previous process is corrected now."""
        for task_id in sorted({b.task_id for b in changed}):
            await self._publisher.refresh_summary(task_id)

    async def _settle_sessions(self, scope: SessionScope) -> None:
        """No agent survives a restart: running sessions wait for input or sit idle."""
        live = [SessionState.STARTING, SessionState.RUNNING, SessionState.WAITING_FOR_INPUT]
        sessions = scope.pick(await self._store.list_sessions_in_states(live), lambda s: s.id)
        active: set[str] = set()
        for task_id in sorted({s.task_id for s in sessions}):
            active.update(await self._store.sessions_with_active_clarification(task_id))
        targets: dict[SessionState, list[str]] = {}
        for session in sessions:
            target = SessionState.WAITING_FOR_INPUT if session.id in active else SessionState.IDLE
            if target is not session.state:
                targets.setdefault(target, []).append(session.id)
        for target, ids in targets.items():
            await self._store.transition_sessions(ids, target)
