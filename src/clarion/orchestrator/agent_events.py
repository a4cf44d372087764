"""What agents report, recorded durably in arrival order and turned into turn ends.

Streamed text becomes transcript messages in the turn of the prompt generation that produced
it (consecutive chunks of one kind grow one message). When a prompt returns its turn is
completed, its bundles detach (no waiter can own them any more), and the next queued prompt
runs. A completion that arrives while a detached-answer reservation is in flight waits for the
reservation's outcome first, and one from a superseded generation never runs the session's
ready handling against the newer turn.
"""

from __future__ import annotations

import logging

from clarion.clarification.canceller import ClarificationCanceller
from clarion.domain.models import AuthorType, MessageType, SessionState
from clarion.domain.turn_outcomes import TurnEnd
from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.failures import AgentFailures
from clarion.orchestrator.lanes import Lanes
from clarion.orchestrator.permissions import AGENT_EXITED, TURN_ENDED, PermissionService
from clarion.orchestrator.watchdog import Watchdogs
from clarion.ports import (
    AgentExited,
    AgentOutput,
    NewMessage,
    PermissionAsk,
    PromptFinished,
    TurnStore,
)
from clarion.projection.events import EventPublisher
from clarion.runtime.supervisor import Supervisor, bounded

log = logging.getLogger(__name__)

_TEXT_KINDS = {"message": MessageType.MESSAGE, "thought": MessageType.THOUGHT}


class AgentEvents:
    """The AgentSink of the runtime."""

    def __init__(
        self,
        *,
        store: TurnStore,
        publisher: EventPublisher,
        lanes: Lanes,
        admission: TurnAdmission,
        canceller: ClarificationCanceller,
        watchdogs: Watchdogs,
        supervisor: Supervisor,
        persist_s: float,
        permissions: PermissionService | None = None,
        failures: AgentFailures | None = None,
    ) -> None:
        self._permissions = permissions
        self._failures = failures
        self._store = store
        self._publisher = publisher
        self._lanes = lanes
        self._admission = admission
        self._canceller = canceller
        self._watchdogs = watchdogs
        self._supervisor = supervisor
        self._persist_s = persist_s
        # (session, generation) -> (kind, message_id) of the message that chunks extend
        self._streaming: dict[tuple[str, int], tuple[str, str]] = {}

    async def on_output(self, output: AgentOutput) -> None:
        self._watchdogs.observe(output)
        if output.kind == "cancel_ack":
            return
        lane = self._lanes.get(output.session_id)
        turn_id = lane.turn_by_generation.get(output.generation)
        if turn_id is None:
            log.warning(
                "output from an unknown prompt generation dropped",
                extra={"session_id": output.session_id, "generation": output.generation},
            )
            return
        key = (output.session_id, output.generation)
        if output.kind in _TEXT_KINDS:
            await self._record_text(key, turn_id, output)
        elif output.kind == "tool_call":
            self._streaming.pop(key, None)
            await self._record_tool_call(turn_id, output)
        elif output.kind == "tool_call_update":
            await self._update_tool_call(output)

    async def _record_text(self, key: tuple[str, int], turn_id: str, output: AgentOutput) -> None:
        current = self._streaming.get(key)
        if current is not None and current[0] == output.kind:
            message = await self._store.append_message_content(current[1], output.text)
            await self._publisher.message("updated", message, content_only=True)
            return
        message = await self._store.add_message(
            NewMessage(
                session_id=output.session_id,
                author_type=AuthorType.AGENT,
                type=_TEXT_KINDS[output.kind],
                content=output.text,
                turn_id=turn_id,
            )
        )
        self._streaming[key] = (output.kind, message.id)
        await self._publisher.message("added", message)

    async def _record_tool_call(self, turn_id: str, output: AgentOutput) -> None:
        data = dict(output.data)
        message = await self._store.add_message(
            NewMessage(
                session_id=output.session_id,
                author_type=AuthorType.AGENT,
                type=MessageType.TOOL_CALL,
                content=str(data.get("title", "")),
                metadata=data,
                turn_id=turn_id,
            )
        )
        await self._publisher.message("added", message)

    async def _update_tool_call(self, output: AgentOutput) -> None:
        # Progress of a tool call is not part of the durable transcript; the call itself is.
        log.debug(
            "tool call updated",
            extra={
                "session_id": output.session_id,
                "tool_call_id": output.data.get("tool_call_id"),
                "status": output.data.get("status"),
            },
        )

    async def on_prompt_finished(self, finished: PromptFinished) -> None:
        lane = self._lanes.get(finished.session_id)
        if not lane.reservation_settled.is_set():
            try:
                await bounded(lane.reservation_settled.wait(), self._persist_s)
            except TimeoutError:
                log.warning(
                    "reservation still unresolved; completion handled anyway",
                    extra={"session_id": finished.session_id},
                )
        self._streaming.pop((finished.session_id, finished.generation), None)
        turn_id = lane.turn_by_generation.get(finished.generation)
        superseded = finished.generation != lane.generation
        lane.end(finished.generation)
        if self._permissions is not None:
            # Before the turn completes: a request never outlives the call that made it.
            await self._permissions.settle(finished.session_id, TURN_ENDED)
        if turn_id is not None:
            await self._complete_turn(finished, turn_id)
        if finished.error is not None and not finished.agent_alive:
            # The agent is gone: its exit (reported next, unless Clarion stopped it) decides
            # what becomes of the session; starting it again for a queued prompt would not.
            log.info(
                "prompt ended with its agent gone",
                extra={"session_id": finished.session_id, "turn_id": turn_id},
            )
            return
        if finished.error is not None and turn_id is not None and self._failures is not None:
            session = await self._store.get_session(finished.session_id)
            if not session.state.is_terminal:
                await self._failures.prompt_failed(
                    finished.session_id,
                    turn_id,
                    error=finished.error,
                    stop_reason=finished.stop_reason,
                    stderr=finished.stderr,
                )
        if superseded:
            log.info(
                "completion of a superseded prompt generation: no ready handling",
                extra={
                    "session_id": finished.session_id,
                    "generation": finished.generation,
                    "turn_id": turn_id,
                },
            )
            return
        session = await self._store.get_session(finished.session_id)
        if not session.state.is_terminal:
            active = await self._store.list_active_bundle_ids(finished.session_id)
            await self._admission.transition(
                finished.session_id, SessionState.WAITING_FOR_INPUT if active else SessionState.IDLE
            )
        self._supervisor.spawn(
            self._admission.dispatch_next(finished.session_id),
            name=f"dispatch-next:{finished.session_id}",
        )

    async def _complete_turn(self, finished: PromptFinished, turn_id: str) -> None:
        end = TurnEnd(stop_reason=finished.stop_reason, error=finished.error or None)
        if await self._store.complete_turn(turn_id, end=end):
            turn = await self._store.get_turn(turn_id)
            log.info(
                "turn completed",
                extra={
                    "session_id": finished.session_id,
                    "turn_id": turn_id,
                    "stop_reason": finished.stop_reason,
                },
            )
            await self._publisher.turn_quietly("completed", turn)
        current = await self._store.find_current_turn(finished.session_id)
        if current is not None and current.id == turn_id:
            # No waiter can own this turn's questions once its prompt returned.
            await self._canceller.detach(finished.session_id)

    async def on_permission(self, ask: PermissionAsk) -> str | None:
        if self._permissions is None:
            return None
        return await self._permissions.on_permission(ask)

    async def on_agent_exited(self, exited: AgentExited) -> None:
        """The agent process exited on its own: the session ends FAILED, saying why; its
        requests are cancelled and its questions expire, as when a session finishes."""
        session = await self._store.get_session(exited.session_id)
        extra = {"session_id": exited.session_id, "exit_code": exited.exit_code}
        if session.state.is_terminal:
            log.info("agent exited after its session ended", extra=extra)
            return
        self._watchdogs.cancel_session(exited.session_id)
        self._lanes.get(exited.session_id).queue.clear()
        if self._permissions is not None:
            await self._permissions.settle(exited.session_id, AGENT_EXITED)
        if self._failures is not None:
            await self._failures.process_exited(
                exited.session_id,
                agent=session.agent,
                exit_code=exited.exit_code,
                stderr=exited.stderr,
            )
        try:
            await self._canceller.expire_session(exited.session_id)
        except Exception:
            log.exception(
                "expiry of a failed session's bundles failed; the terminal state still "
                "quarantines them",
                extra=extra,
            )
        await self._publisher.refresh_summary(session.task_id)
