"""The primary-answer watchdog: if an agent goes silent after a live answer, hand it over again.

A watch is armed synchronously inside the live confirmation boundary, before the agent's tool
call returns, so no acknowledgement from the agent can race past it. Any independent activity
of the agent in that session cancels the watch, as does shutdown. When the watch fires, the
fallback re-checks that the clarification's turn is still current, silently cancels the
agent's prompt (the cancellation's own acknowledgement frame, identified by its prompt
generation, does not count as activity), re-checks that exactly that turn completed and that
no other turn is active, then hands the answer over once as a replacement prompt, checked
again inside serialized admission. Nothing here is persisted.

One report is not activity: the agent saying that the call that asked the question failed
(`AskCalls`), in the watched turn, before or after the confirmation. Its own client gave up
as the answer was confirmed, so it never read it: the watch ends and `send_again` takes the
answer over (marked ambiguous durably, then sent once as a new turn after the agent's own
turn ends).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from clarion.orchestrator.admission import TurnAdmission
from clarion.orchestrator.ask_calls import AskCalls
from clarion.orchestrator.lanes import Lanes
from clarion.ports import AgentOutput, AgentRuntime, Clock, TurnStore
from clarion.runtime.supervisor import Supervisor, bounded

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Watch:
    session_id: str
    pending_id: str
    turn_id: str
    prompt: str
    future: asyncio.Future[None] | None = field(default=None)

    @property
    def key(self) -> tuple[str, str]:
        return (self.session_id, self.pending_id)


class Watchdogs:
    def __init__(
        self,
        *,
        store: TurnStore,
        runtime: AgentRuntime,
        lanes: Lanes,
        admission: TurnAdmission,
        supervisor: Supervisor,
        watchdog_s: float,
        persist_s: float,
        clock: Clock,
        send_again: Callable[[str], Coroutine[Any, Any, None]],
    ) -> None:
        self._clock = clock
        self._send_again = send_again  # by pending id
        self._ask_calls = AskCalls()
        self._store = store
        self._runtime = runtime
        self._lanes = lanes
        self._admission = admission
        self._supervisor = supervisor
        self._watchdog_s = watchdog_s
        self._persist_s = persist_s
        self._watches: dict[tuple[str, str], Watch] = {}

    def arm(self, session_id: str, pending_id: str, turn_id: str, prompt: str) -> None:
        watch = Watch(session_id=session_id, pending_id=pending_id, turn_id=turn_id, prompt=prompt)
        self._cancel(watch.key)
        failed = self._ask_calls.newest_failed(session_id)
        if failed is not None and self._made_by(watch, failed):
            self._hand_to_send_again(watch)  # the agent gave up on the call before this
            return
        self._watches[watch.key] = watch
        watch.future = self._supervisor.spawn(
            self._run(watch), name=f"watchdog:{session_id}:{pending_id}"
        )
        log.info(
            "primary-answer watchdog armed",
            extra={"session_id": session_id, "pending_id": pending_id, "turn_id": turn_id},
        )

    def armed(self, session_id: str) -> list[Watch]:
        return [w for w in self._watches.values() if w.session_id == session_id]

    def observe(self, output: AgentOutput) -> None:
        """Agent activity cancels the session's watches, except the acknowledgement of a
        cancellation the fallback itself owns, and the agent's report that the watched turn's
        question call failed, which sends the answer again instead."""
        if self._ask_calls.observe(output):
            unread = [
                w for w in self.armed(output.session_id) if self._made_by(w, output.generation)
            ]
            for watch in unread:
                self._hand_to_send_again(watch)
            if unread:
                return
        lane = self._lanes.find(output.session_id)
        if (
            output.kind == "cancel_ack"
            and lane is not None
            and lane.recovery_cancel_generation == output.generation
        ):
            return
        for watch in self.armed(output.session_id):
            log.info(
                "agent activity cancels the watchdog",
                extra={
                    "session_id": watch.session_id,
                    "pending_id": watch.pending_id,
                    "kind": output.kind,
                },
            )
            self._cancel(watch.key)

    def cancel_session(self, session_id: str) -> None:
        self._ask_calls.forget(session_id)
        for watch in self.armed(session_id):
            log.info(
                "session ended; watchdog dropped",
                extra={"session_id": session_id, "pending_id": watch.pending_id},
            )
            self._cancel(watch.key)

    def cancel_all(self) -> None:
        for key in list(self._watches):
            self._cancel(key)

    def _made_by(self, watch: Watch, generation: int) -> bool:
        lane = self._lanes.find(watch.session_id)
        return lane is not None and lane.turn_by_generation.get(generation) == watch.turn_id

    def _hand_to_send_again(self, watch: Watch) -> None:
        self._cancel(watch.key)
        log.warning(
            "agent reported the question's call failed; its live answer goes again",
            extra={
                "session_id": watch.session_id,
                "pending_id": watch.pending_id,
                "turn_id": watch.turn_id,
            },
        )
        self._supervisor.spawn(
            self._send_again(watch.pending_id), name=f"send-again:{watch.pending_id}"
        )

    def _cancel(self, key: tuple[str, str]) -> None:
        watch = self._watches.pop(key, None)
        if watch is not None and watch.future is not None:
            watch.future.cancel()

    async def _run(self, watch: Watch) -> None:
        try:
            await self._clock.sleep(self._watchdog_s)
            log.warning(
                "agent silent after a live answer; watchdog fallback",
                extra={
                    "session_id": watch.session_id,
                    "pending_id": watch.pending_id,
                    "turn_id": watch.turn_id,
                },
            )
            await bounded(self._fallback(watch), self._persist_s)
        finally:
            if self._watches.get(watch.key) is watch:
                del self._watches[watch.key]

    async def _fallback(self, watch: Watch) -> None:
        if not await self._turn_is_current(watch):
            log.info(
                "watchdog: clarification turn superseded; nothing to do",
                extra={"session_id": watch.session_id, "turn_id": watch.turn_id},
            )
            return
        lane = self._lanes.get(watch.session_id)
        generation = lane.running_generation
        if generation is not None and lane.turn_by_generation.get(generation) == watch.turn_id:
            lane.recovery_cancel_generation = generation
            try:
                await self._runtime.cancel(watch.session_id)
                await lane.idle.wait()
            finally:
                lane.recovery_cancel_generation = None
        current = await self._store.find_current_turn(watch.session_id)
        if current is None or current.id != watch.turn_id or current.completed_at is None:
            log.info(
                "watchdog: turn authority changed while cancelling; no hand-off",
                extra={"session_id": watch.session_id, "turn_id": watch.turn_id},
            )
            return
        async with lane.admission:
            if lane.running_generation is not None or not await self._turn_is_current(watch):
                return
            session = await self._store.get_session(watch.session_id)
            if session.state.is_terminal:
                return
            turn = await self._admission.dispatch_locked(
                lane, session, watch.prompt, record_prompt=False
            )
            log.info(
                "watchdog handed the answer over as a replacement prompt",
                extra={
                    "session_id": watch.session_id,
                    "pending_id": watch.pending_id,
                    "turn_id": turn.id,
                    "source_turn_id": watch.turn_id,
                },
            )

    async def _turn_is_current(self, watch: Watch) -> bool:
        current = await self._store.find_current_turn(watch.session_id)
        return current is not None and current.id == watch.turn_id
