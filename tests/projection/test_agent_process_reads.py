"""A session read tells a stopped agent's reason consistently: an idle stop that lands while
the read runs never shows as "agent not running" (the note of an agent that is not running for
no recorded reason). The read looks at which agents run before it reads the session's row, and
the stop records its reason before it ends the process, so a read that sees the process gone
also sees why."""

from __future__ import annotations

from typing import Any

from clarion.domain.agent_process import IDLE_NOTE
from clarion.domain.models import Session, SessionState
from clarion.projection.reads import AgentRunningHere, running_among
from clarion.runtime.clock import ManualClock
from tests.projection.builders import World, projections
from tests.whole_store import WholeStore


class StopAfterRowRead:
    """The read store, except that an idle stop (the recorded reason, then the process's end)
    happens right after the first read of the session's row: the worst moment for a reader."""

    def __init__(self, store: WholeStore, running: set[str]) -> None:
        self._store = store
        self._running = running
        self.stopped = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get_session(self, session_id: str) -> Session:
        row = await self._store.get_session(session_id)
        if not self.stopped:
            self.stopped = True
            assert await self._store.mark_agent_stopped(session_id) is not None
            self._running.discard(session_id)
        return row


async def test_an_idle_stop_during_a_session_read_never_reads_as_an_unexplained_stop(
    any_store: WholeStore, clock: ManualClock
) -> None:
    session = await World(any_store, clock).session(state=SessionState.IDLE, turn=False)
    running = {session.id}
    racing = StopAfterRowRead(any_store, running)

    def look() -> AgentRunningHere:
        return running_among(frozenset(running))

    reads = (await projections(racing, agent_running=look)).reads
    during = await reads.session(session.id)
    assert racing.stopped
    assert (during["agent_process"], during["agent_process_note"]) == ("running", None)

    after = await reads.session(session.id)
    assert (after["agent_process"], after["agent_process_note"]) == ("stopped", IDLE_NOTE)
