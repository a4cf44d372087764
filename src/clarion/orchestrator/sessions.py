"""Session use cases: start a session, cancel its running turn, finish it.

Finishing is the terminal transition: the session's current-turn bundles expire in the same
sequence, under a fresh bounded context, and the agent process stops. Even if expiry fails, the
terminal state alone already quarantines the bundles (every claim and projection checks it).
"""

from __future__ import annotations

import logging

from clarion.clarification.canceller import ClarificationCanceller
from clarion.domain.bundles import bundle_state
from clarion.domain.errors import ClarificationActive, Conflict, InvalidInput, NotFound
from clarion.domain.models import (
    AuthorType,
    BundleState,
    Message,
    MessageType,
    Session,
    SessionState,
)
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.launch import SessionTokens
from clarion.orchestrator.permissions import CANCELLED, SESSION_FINISHED, PermissionService
from clarion.orchestrator.watchdog import Watchdogs
from clarion.ports import AgentRuntime, NewMessage, TurnStore
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
        store: TurnStore,
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

    @property
    def agents(self) -> frozenset[str]:
        """The agent profile names a session may start with."""
        return self._known_agents

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

    async def cancel(self, session_id: str) -> int:
        """Cancel the running turn and drop the prompts queued behind it; returns how many
        were dropped. A drop is never silent: the transcript gets a system note naming them."""
        session = await self._store.get_session(session_id)
        if session.state.is_terminal:
            raise Conflict("session has ended", session_id=session_id)
        lane = self._lanes.get(session_id)
        dropped = list(lane.queue)
        lane.queue.clear()
        if lane.running_generation is not None:
            log.info(
                "user cancelled the running turn",
                extra={"session_id": session_id, "dropped_prompts": len(dropped)},
            )
            if self._permissions is not None:
                # ACP: a client that cancels answers its open permission requests `cancelled`.
                await self._permissions.settle(session_id, CANCELLED)
            await self._runtime.cancel(session_id)
        if dropped:
            await self._note_dropped(session_id, lane.running_turn_id, dropped)
        return len(dropped)

    async def _note_dropped(self, session_id: str, turn_id: str | None, texts: list[str]) -> None:
        count = f"{len(texts)} queued prompt" + ("s" if len(texts) != 1 else "")
        lines = "\n".join(f"- {text}" for text in texts)
        note = NewMessage(
            session_id=session_id,
            author_type=AuthorType.SYSTEM,
            type=MessageType.MESSAGE,
            content=f"Cancel dropped {count} that had not started:\n{lines}",
            metadata={"dropped_prompts": len(texts)},
            turn_id=turn_id,
        )
        try:
            message = await self._store.add_message(note)
        except Exception:
            # The response still reports the count; the note is a courtesy in the transcript.
            log.exception("could not record the dropped prompts", extra={"session_id": session_id})
            return
        await self._publisher.message("added", message)

    async def delete_message(self, session_id: str, message_id: str) -> Message | None:
        """Delete one transcript row. Turns are untouched, so ownership never moves back.
        A row of a bundle that is still active stays (ClarificationActive): deleting it would
        leave the agent waiting on a question nobody can see or answer."""
        await self._refuse_active_question(session_id, message_id)
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

    async def _refuse_active_question(self, session_id: str, message_id: str) -> None:
        try:
            message = await self._store.get_message(message_id)
        except NotFound:
            return
        pending_id = message.pending_id
        if message.session_id != session_id or pending_id is None:
            return
        bundle = await self._store.find_bundle(pending_id)
        if bundle is None:
            return
        # No waiter registry here: an active bundle reads as detached, and the HTTP edge
        # reports the live state when a waiter holds the call.
        state = bundle_state(bundle, has_live_waiter=False)
        if state in (BundleState.ACTIVE_DETACHED, BundleState.DELIVERY_CLAIMED):
            raise ClarificationActive(
                "the message belongs to a clarification that is still active; answer, skip or "
                "cancel it first",
                state=str(state),
                pending_id=pending_id,
                session_id=session_id,
                message_id=message_id,
            )

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
