"""Startup reconciliation, run before any event processing or prompt admission.

In order: a new projection epoch; unpublished successor reservations; response-delivery
intents no reservation owns; the start-event outbox; bundles that lost their live waiter; turns
the previous process left open. Every step is a query that is harmless to run twice, and any
failure aborts startup: nothing may supersede an unrecovered claim.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from clarion import failpoints
from clarion.domain.models import SessionState
from clarion.ports import Store
from clarion.projection.events import EventPublisher
from clarion.projection.pending import PendingProjector

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

        detached = 0
        for session_id, pending_id in await self._store.list_detachable_bundles():
            changed = await self._store.detach_bundles(session_id, pending_id=pending_id)
            detached += bool(changed)
            log.info(
                "startup: bundle lost its waiter; detached",
                extra={"session_id": session_id, "pending_id": pending_id},
            )
            await self._publisher.messages("updated", changed)

        open_turns = await self._store.list_open_turns()
        for turn in open_turns:
            if await self._store.complete_turn(turn.id, metadata_patch={"interrupted": True}):
                log.info(
                    "startup: open turn completed as interrupted",
                    extra={"session_id": turn.session_id, "turn_id": turn.id},
                )
                await self._publisher.turn_quietly("completed", await self._store.get_turn(turn.id))
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

    async def _settle_sessions(self) -> None:
        """No agent survives a restart: running sessions wait for input or sit idle."""
        live = [SessionState.STARTING, SessionState.RUNNING, SessionState.WAITING_FOR_INPUT]
        for session in await self._store.list_sessions_in_states(live):
            active = await self._store.list_active_bundle_ids(session.id)
            target = SessionState.WAITING_FOR_INPUT if active else SessionState.IDLE
            if target is not session.state:
                await self._store.transition_session(session.id, target)
