"""Session use cases: start a session, cancel its running turn, finish it.

Finishing is the terminal transition: the session's current-turn bundles expire in the same
sequence, under a fresh bounded context, and the agent process stops. Even if expiry fails, the
terminal state alone already quarantines the bundles (every claim and projection checks it).
"""

from __future__ import annotations

import logging

from clarion.clarification.canceller import ClarificationCanceller
from clarion.domain.errors import Conflict, InvalidInput
from clarion.domain.models import Message, Session, SessionState
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.launch import SessionTokens
from clarion.orchestrator.permissions import CANCELLED, SESSION_FINISHED, PermissionService
from clarion.orchestrator.watchdog import Watchdogs
from clarion.ports import AgentRuntime, Store
from clarion.projection.events import EventPublisher

log = logging.getLogger(__name__)

FINISH_STATES = {
    "completed": SessionState.COMPLETED,
    "failed": SessionState.FAILED,
    "cancelled": SessionState.CANCELLED,
}


class SessionService:
    def __init__(
        self,
        *,
        store: Store,
        runtime: AgentRuntime,
        publisher: EventPublisher,
        lanes: Lanes,
        admission: TurnAdmission,
        canceller: ClarificationCanceller,
        watchdogs: Watchdogs,
        tokens: SessionTokens,
        known_agents: frozenset[str],
        permissions: PermissionService | None = None,
    ) -> None:
        self._permissions = permissions
        self._store = store
        self._runtime = runtime
        self._publisher = publisher
        self._lanes = lanes
        self._admission = admission
        self._canceller = canceller
        self._watchdogs = watchdogs
        self._tokens = tokens
        self._known_agents = known_agents

    async def start(
        self, task_id: str, *, agent: str, prompt: str | None, is_primary: bool | None
    ) -> Session:
        task = await self._store.get_task(task_id)
        if agent not in self._known_agents:
            raise InvalidInput(f"unknown agent profile {agent!r}", field="agent")
        text = prompt if prompt is not None and prompt.strip() else task.description
        if is_primary is None:
            is_primary = not await self._store.list_sessions(task_id)
        session = await self._store.create_session(
            task_id=task_id, agent=agent, is_primary=is_primary
        )
        log.info(
            "session created", extra={"task_id": task_id, "session_id": session.id, "agent": agent}
        )
        await self._publisher.session_state(session)
        if text.strip():
            await self._admission.submit(session.id, text)
        return await self._store.get_session(session.id)

    async def cancel(self, session_id: str) -> None:
        session = await self._store.get_session(session_id)
        if session.state.is_terminal:
            raise Conflict("session has ended", session_id=session_id)
        lane = self._lanes.get(session_id)
        lane.queue.clear()
        if lane.running_generation is not None:
            log.info("user cancelled the running turn", extra={"session_id": session_id})
            if self._permissions is not None:
                # ACP: a client that cancels answers its open permission requests `cancelled`.
                await self._permissions.settle(session_id, CANCELLED)
            await self._runtime.cancel(session_id)

    async def delete_message(self, session_id: str, message_id: str) -> Message | None:
        """Delete one transcript row. Turns are untouched, so ownership never moves back."""
        deleted = await self._store.delete_message(session_id, message_id)
        if deleted is not None:
            log.info(
                "message deleted",
                extra={
                    "session_id": session_id,
                    "message_id": message_id,
                    "turn_id": deleted.turn_id,
                },
            )
            await self._publisher.message("deleted", deleted)
        return deleted

    async def finish(self, session_id: str, state: str) -> Session:
        target = FINISH_STATES.get(state)
        if target is None:
            raise InvalidInput("state must be completed, failed or cancelled", field="state")
        session = await self._store.get_session(session_id)
        if session.state.is_terminal:
            raise Conflict("session has already ended", session_id=session_id)
        if not await self._store.transition_session(session_id, target):
            raise Conflict("session has already ended", session_id=session_id)
        log.info("session finished", extra={"session_id": session_id, "state": str(target)})
        self._watchdogs.cancel_session(session_id)
        self._lanes.get(session_id).queue.clear()
        if self._permissions is not None:
            await self._permissions.settle(session_id, SESSION_FINISHED)
        try:
            await self._canceller.expire_session(session_id)
        except Exception:
            log.exception(
                "expiry of a terminal session's bundles failed; the terminal state "
                "still quarantines them",
                extra={"session_id": session_id},
            )
        finished = await self._store.get_session(session_id)
        await self._publisher.session_state(finished)
        await self._publisher.refresh_summary(finished.task_id)
        await self._runtime.stop(session_id)
        self._tokens.revoke(session_id)
        return finished
