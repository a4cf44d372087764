"""Idle agents stop, and start again on the next prompt.

An agent whose session has had no open turn, no live question and no pending permission for
its profile's `agent_idle_stop_after` is stopped the way a server stop stops it (no failure,
no error row). One timer per running agent, sleeping through the injected clock, looks when
the time may be up; the decision is taken under the session's admission lane, so it is
serialized with every prompt path (a person's message, a detached answer's resume, a resend,
the watchdog's hand-off), and checked three times: the in-process facts (a running prompt,
queued prompts, a reservation, a live waiter, a pending permission), the durable rows (how
long ago the current turn ended), and the guarded write that records the stop (IDLE or
WAITING_FOR_INPUT with no open turn). A prompt that takes the lane first wins: the agent
keeps running. One that arrives while the stop runs waits for it and starts the agent again
through the ordinary start-on-demand path (`session/load`, or the recap).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from clarion.domain.agent_process import stopped_while_idle
from clarion.domain.models import Session
from clarion.orchestrator.lanes import Lane, Lanes
from clarion.ports import AgentRuntime, Clock, TurnStore
from clarion.projection.events import EventPublisher
from clarion.runtime.supervisor import Supervisor

log = logging.getLogger(__name__)


class IdleStops:
    def __init__(
        self,
        *,
        store: TurnStore,
        runtime: AgentRuntime,
        lanes: Lanes,
        publisher: EventPublisher,
        supervisor: Supervisor,
        clock: Clock,
        stop_after: Mapping[str, float],
        held_elsewhere: Callable[[str], bool] = lambda _session_id: False,
    ) -> None:
        """`stop_after`: seconds by agent profile (0 or missing: never). `held_elsewhere`:
        whether something outside the lane holds the session (a live waiter, a pending
        permission request)."""
        self._store = store
        self._runtime = runtime
        self._lanes = lanes
        self._publisher = publisher
        self._supervisor = supervisor
        self._clock = clock
        self._stop_after = dict(stop_after)
        self._held_elsewhere = held_elsewhere
        self._timers: dict[str, asyncio.Future[None]] = {}
        # Sessions whose agent this process stopped: their record is cleared on the next start
        # even if the caller's session was read before the stop was recorded.
        self._stopped: set[str] = set()

    async def agent_started(self, session: Session) -> None:
        """The session's agent has just started (first start, or again after a stop)."""
        if session.id in self._stopped or stopped_while_idle(session):
            self._stopped.discard(session.id)
            if await self._store.clear_agent_stopped(session.id):
                log.info("agent running again after an idle stop", extra={"session_id": session.id})
        after = self._stop_after.get(session.agent, 0.0)
        if after > 0 and session.id not in self._timers:
            self._timers[session.id] = self._supervisor.spawn(
                self._watch(session.id, after), name=f"idle-stop:{session.id}"
            )

    def watching(self, session_id: str) -> bool:
        return session_id in self._timers

    async def _watch(self, session_id: str, after: float) -> None:
        try:
            wait = after
            while True:
                await self._clock.sleep(wait)
                if not self._runtime.is_running(session_id):
                    return  # stopped or exited otherwise: the next start watches again
                next_look = await self._stop_if_idle(session_id, after)
                if next_look is None:
                    return
                wait = next_look
        except Exception:
            log.exception("idle-stop timer failed", extra={"session_id": session_id})
        finally:
            self._timers.pop(session_id, None)

    async def _stop_if_idle(self, session_id: str, after: float) -> float | None:
        """Stop the agent if the session has been idle for `after`: None once stopped, else
        how long until it may have been."""
        lane = self._lanes.get(session_id)
        if self._busy(lane):
            return after
        async with lane.admission:
            if self._busy(lane) or not self._runtime.is_running(session_id):
                return after
            left = await self._idle_left(session_id, after)
            if left > 0:
                return left
            stopped = await self._store.mark_agent_stopped(session_id)
            if stopped is None:
                return after
            self._stopped.add(session_id)
            await self._runtime.stop(session_id)
            log.info(
                "agent stopped while idle",
                extra={"session_id": session_id, "idle_stop_after_s": after},
            )
        await self._publisher.session_state(stopped)
        return None

    def _busy(self, lane: Lane) -> bool:
        return (
            lane.running_generation is not None
            or bool(lane.queue)
            or lane.reservation_turn_id is not None
            or lane.blocked_reason is not None
            or self._held_elsewhere(lane.session_id)
        )

    async def _idle_left(self, session_id: str, after: float) -> float:
        """Seconds until the session has been idle for `after` by its rows (0: it has)."""
        current = await self._store.find_current_turn(session_id)
        if current is None:
            return 0.0
        if current.completed_at is None:
            return after
        idle_for = (self._clock.now() - current.completed_at).total_seconds()
        return max(0.0, after - idle_for)
