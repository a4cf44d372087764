"""Startup reconciliation, run before any event processing or prompt admission.

In order: a new projection epoch; unpublished successor reservations; response-delivery
intents no reservation owns; the start-event outbox; bundles that lost their live waiter; turns
the previous process left open. Every step is a query that is harmless to run twice, and any
failure aborts startup: nothing may supersede an unrecovered claim.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from clarion import failpoints
from clarion.domain.models import Message, MetaKey, SessionState
from clarion.domain.wire import message_wire
from clarion.ports import Event, Store
from clarion.projection.events import EventPublisher
from clarion.projection.pending import PendingProjector, Projection

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    epoch: int
    reservations_kept: int
    reservations_rolled_back: int
    intents_restored: int
    intents_retired: int
    outbox_replayed: int
    bundles_detached: int
    turns_interrupted: int


class StartupRecovery:
    def __init__(
        self, store: Store, projector: PendingProjector, publisher: EventPublisher
    ) -> None:
        self._store = store
        self._projector = projector
        self._publisher = publisher

    async def run(self) -> RecoveryReport:
        epoch = await self._projector.allocate_epoch()

        await failpoints.hit("startup.reservations")
        reservations = await self._store.reconcile_reservations()
        for r in reservations:
            log.info(
                "startup: reservation reconciled",
                extra={
                    "session_id": r.session_id,
                    "turn_id": r.turn_id,
                    "pending_id": r.pending_id,
                    "kept": r.kept,
                    "message_ids": list(r.message_ids),
                },
            )

        await failpoints.hit("startup.intents")
        intents = await self._store.reconcile_intents()
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

        outbox = await self._store.list_outbox_turns()
        for turn in outbox:
            await self._publisher.turn("started", turn)
            if turn.completed_at is not None:
                await self._publisher.turn("completed", turn)
            await self._store.clear_outbox(turn.id)
            log.info(
                "startup: turn start replayed from the outbox",
                extra={"session_id": turn.session_id, "turn_id": turn.id},
            )

        # Set-based: one transaction for every orphaned bundle, one projection read for every
        # affected session, one summary refresh per task (not one of each per row).
        changed = await self._store.detach_all_bundles()
        bundles = sorted({(m.session_id, _pending_id(m)) for m in changed})
        for session_id, pending_id in bundles:
            log.info(
                "startup: bundle lost its waiter; detached",
                extra={"session_id": session_id, "pending_id": pending_id},
            )
        await self._publish_updated(changed)
        detached = len(bundles)

        open_turns = await self._store.complete_open_turns(metadata_patch={"interrupted": True})
        for turn in open_turns:
            log.info(
                "startup: open turn completed as interrupted",
                extra={"session_id": turn.session_id, "turn_id": turn.id},
            )
            await self._publisher.turn_quietly("completed", turn)
        await self._settle_sessions()

        report = RecoveryReport(
            epoch=epoch,
            reservations_kept=sum(r.kept for r in reservations),
            reservations_rolled_back=sum(not r.kept for r in reservations),
            intents_restored=sum(i.restored for i in intents),
            intents_retired=sum(not i.restored for i in intents),
            outbox_replayed=len(outbox),
            bundles_detached=detached,
            turns_interrupted=len(open_turns),
        )
        log.info("startup recovery finished", extra={"report": report})
        return report

    async def _publish_updated(self, changed: Sequence[Message]) -> None:
        """`session.message.updated` for each changed row, as EventPublisher.messages would
        publish it, but with one projection read for all sessions and one summary refresh
        per task."""
        if not changed:
            return
        sessions = sorted({m.session_id for m in changed})
        projections: dict[str, Projection] = {}
        try:
            projections = await self._projector.project(sessions)
        except Exception:
            log.exception("pending projection failed; events carry no pending_action")
        for message in changed:
            payload = message_wire(message)
            projection = projections.get(message.session_id)
            if projection is not None:
                action = projection.pending_action
                payload["pending_action"] = None if action is None else str(action)
                payload["pending_action_revision"] = projection.revision.as_wire()
            await self._publisher.raw(
                Event(
                    type="session.message.updated",
                    task_id=message.task_id,
                    session_id=message.session_id,
                    payload=payload,
                )
            )
        if projections:
            for task_id in sorted({m.task_id for m in changed}):
                await self._publisher.refresh_summary(task_id)

    async def _settle_sessions(self) -> None:
        """No agent survives a restart: running sessions wait for input or sit idle."""
        live = [SessionState.STARTING, SessionState.RUNNING, SessionState.WAITING_FOR_INPUT]
        sessions = await self._store.list_sessions_in_states(live)
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


def _pending_id(message: Message) -> str:
    return str(message.metadata.get(MetaKey.PENDING_ID, ""))
