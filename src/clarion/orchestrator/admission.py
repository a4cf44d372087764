"""Prompt admission: every prompt to an agent enters here, one at a time per session.

A prompt becomes a durable turn before the agent sees it, and the agent process is started
(recording a lifecycle turn) when it is not running. Prompts that arrive while a turn runs
wait in the lane's queue and run in order when it ends. A session whose detached-answer
reservation could not be resolved admits nothing until restart recovery reconciles it.
"""

from __future__ import annotations

import logging

from clarion.domain.errors import AgentUnavailable, Conflict
from clarion.domain.models import AuthorType, MessageType, Session, SessionState, Turn
from clarion.domain.prompts import recap, recap_entries, with_recap
from clarion.domain.turn_outcomes import TurnEnd
from clarion.orchestrator.failures import AgentFailures
from clarion.orchestrator.idle import IdleStops
from clarion.orchestrator.lanes import Lane, Lanes
from clarion.orchestrator.launch import Launcher
from clarion.orchestrator.worktrees import TaskWorktrees
from clarion.ports import AgentRuntime, NewMessage, TurnStore
from clarion.ports.metrics import NO_METRICS, Metrics
from clarion.ports.tracing import NO_TRACER, Span, Tracer
from clarion.projection.events import EventPublisher

log = logging.getLogger(__name__)

# How many of the newest transcript messages a recap is built from (it is bounded again in
# characters); a restarted agent needs the recent thread, not the whole history.
RECAP_MESSAGES = 60


class TurnAdmission:
    def __init__(
        self,
        store: TurnStore,
        runtime: AgentRuntime,
        publisher: EventPublisher,
        lanes: Lanes,
        launcher: Launcher,
        failures: AgentFailures | None = None,
        idle: IdleStops | None = None,
        metrics: Metrics = NO_METRICS,
        tracer: Tracer = NO_TRACER,
        worktrees: TaskWorktrees | None = None,
    ) -> None:
        self._worktrees = worktrees
        self._tracer = tracer
        self._failures = failures
        self._idle = idle
        self._metrics = metrics
        self._store = store
        self._runtime = runtime
        self._publisher = publisher
        self._lanes = lanes
        self._launcher = launcher

    async def submit(self, session_id: str, text: str) -> tuple[str | None, bool]:
        """A user prompt: dispatched now, or queued behind the running turn.

        Returns (turn_id, queued)."""
        session = await self._store.get_session(session_id)
        if session.state.is_terminal:
            raise Conflict("session has ended", session_id=session_id)
        lane = self._lanes.get(session_id)
        async with lane.admission:
            self._check_open(lane)
            if lane.running_generation is not None or lane.queue:
                lane.queue.append(text)
                log.info(
                    "prompt queued", extra={"session_id": session_id, "queued": len(lane.queue)}
                )
                return None, True
            turn = await self.dispatch_locked(lane, session, text)
            return turn.id, False

    def _check_open(self, lane: Lane) -> None:
        if lane.blocked_reason is not None:
            raise Conflict(
                "prompt admission is blocked until restart recovery: " + lane.blocked_reason,
                session_id=lane.session_id,
            )

    async def ensure_agent_locked(self, session: Session, *, fail_session: bool = False) -> str:
        """Start the session's agent if it is not running, recording a lifecycle turn.

        With `fail_session` a failed start ends the session (FAILED, the reason in its
        transcript); without it the session goes back to IDLE (a detached answer's resume,
        which must stay retryable). Returns what the next prompt must begin with: a recap of
        the transcript when the agent started without its earlier conversation (it could not
        load its ACP session), else ""."""
        if self._runtime.is_running(session.id):
            return ""
        with self._tracer.span(
            "agent.start", task_id=session.task_id, session_id=session.id
        ) as span:
            span.set("agent", session.agent)
            return await self._start_agent(session, fail_session, span)

    async def _start_agent(self, session: Session, fail_session: bool, span: Span) -> str:
        await self.transition(session.id, SessionState.STARTING)
        try:
            # A task with a repository: its worktree is made (or repaired) first, and the
            # agent runs there whatever its profile's cwd.
            cwd = None
            if self._worktrees is not None:
                cwd = await self._worktrees.working_directory(session)
            started = await self._runtime.ensure_started(
                self._launcher.launch_for(session, cwd=cwd)
            )
        except Exception as exc:
            log.exception("agent failed to start", extra={"session_id": session.id})
            if fail_session and self._failures is not None:
                await self._failures.start_failed(session, exc)
            else:
                await self.transition(session.id, SessionState.IDLE)
            raise AgentUnavailable(
                f"agent {session.agent!r} could not start: {exc}", session_id=session.id
            ) from exc
        if not started:
            span.set("outcome", "already_running")
            return ""
        span.set("outcome", "started")
        self._metrics.agent_started()
        acp = self._runtime.acp_session(session.id)
        context = "loaded" if acp is not None and acp.loaded else "new"
        if acp is not None:
            await self._store.remember_acp_session(session.id, acp.session_id)
        turn = await self._store.create_turn(session.id, lifecycle_only=True)
        await self._store.complete_turn(turn.id, end=TurnEnd(agent_context=context))
        turn = await self._store.get_turn(turn.id)
        span.set("turn_id", turn.id)
        log.info(
            "agent started; lifecycle turn recorded",
            extra={"session_id": session.id, "turn_id": turn.id, "agent_context": context},
        )
        await self._publisher.turn_quietly("started", turn)
        await self._publisher.turn_quietly("completed", turn)
        if self._idle is not None:
            await self._idle.agent_started(session)
        if context == "loaded":
            return ""
        return recap(recap_entries(await self._store.recent_messages(session.id, RECAP_MESSAGES)))

    async def dispatch_locked(
        self, lane: Lane, session: Session, text: str, *, record_prompt: bool = True
    ) -> Turn:
        """Create a turn for `text` and hand it to the agent. Caller holds the lane.

        `record_prompt` False is for Clarion's own hand-off prompts, which are not the
        person's words and so are not written into the transcript."""
        # The recap goes to the agent only; the transcript keeps the person's words.
        prompt = with_recap(await self.ensure_agent_locked(session, fail_session=True), text)
        turn = await self._store.create_turn(session.id)
        generation = lane.begin(turn.id)
        log.info(
            "turn started",
            extra={"session_id": session.id, "turn_id": turn.id, "generation": generation},
        )
        await self._publisher.turn_quietly("started", turn)
        if record_prompt:
            message = await self._store.add_message(
                NewMessage(
                    session_id=session.id,
                    author_type=AuthorType.USER,
                    type=MessageType.MESSAGE,
                    content=text,
                    turn_id=turn.id,
                )
            )
            await self._publisher.message("added", message)
        await self.transition(session.id, SessionState.RUNNING)
        try:
            await self._runtime.prompt(session.id, prompt, generation=generation)
        except Exception as exc:
            log.exception(
                "agent refused the prompt", extra={"session_id": session.id, "turn_id": turn.id}
            )
            lane.end(generation)
            await self._store.complete_turn(turn.id, end=TurnEnd(error=str(exc)))
            await self._publisher.turn_quietly("completed", await self._store.get_turn(turn.id))
            if self._failures is not None:
                await self._failures.prompt_failed(
                    session.id,
                    turn.id,
                    error=f"the agent did not take it ({exc})",
                    stop_reason="refused",
                    stderr=str(getattr(exc, "stderr", "") or ""),
                )
            await self.transition(session.id, SessionState.IDLE)
            raise AgentUnavailable(
                f"agent refused the prompt: {exc}", session_id=session.id, turn_id=turn.id
            ) from exc
        return turn

    async def dispatch_next(self, session_id: str) -> None:
        """Run the next queued prompt, if any, once the lane is idle."""
        lane = self._lanes.get(session_id)
        async with lane.admission:
            if lane.running_generation is not None or not lane.queue:
                return
            if lane.blocked_reason is not None:
                return
            session = await self._store.get_session(session_id)
            if session.state.is_terminal:
                lane.queue.clear()
                return
            text = lane.queue.popleft()
            try:
                await self.dispatch_locked(lane, session, text)
            except Exception:
                log.exception(
                    "queued prompt could not be dispatched", extra={"session_id": session_id}
                )

    async def transition(self, session_id: str, to: SessionState) -> None:
        session = await self._store.transition_session(session_id, to)
        if session is not None:
            await self._publisher.session_state(session)
