"""Whether a session's agent process runs, as the session read reports it (`agent_process`).

Clarion stops an agent whose session sat idle for its profile's `agent_idle_stop_after` and
starts it again on the next prompt. The stop is recorded on the session (`agent_stopped`), so
any reader, on any replica, can tell a session whose agent was stopped while idle; whether an
agent runs right now is known only to the process that runs it.
"""

from __future__ import annotations

from enum import StrEnum

from clarion.domain.models import Session, SessionState

# Session metadata (Clarion's own key): why and when Clarion stopped the agent, cleared when
# it starts again. {"reason": "idle", "at": ISO time}
AGENT_STOPPED = "agent_stopped"
IDLE_REASON = "idle"

IDLE_NOTE = "agent stopped while idle; it starts again on the next message"
NOT_RUNNING_NOTE = "agent not running; it starts again on the next message"

# States in which nothing is in flight for the session: its agent may be stopped.
IDLE_STATES = frozenset({SessionState.IDLE, SessionState.WAITING_FOR_INPUT})


class AgentProcess(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"
    STARTING = "starting"


def stopped_while_idle(session: Session) -> bool:
    mark = session.metadata.get(AGENT_STOPPED)
    return isinstance(mark, dict) and mark.get("reason") == IDLE_REASON


def agent_process(session: Session, running_here: bool | None) -> AgentProcess:
    """`running_here`: whether this process runs the agent, or None when it cannot know (a
    cluster replica reading another replica's session), then the durable record decides."""
    if session.state is SessionState.STARTING:
        return AgentProcess.STARTING
    if session.state.is_terminal:
        return AgentProcess.STOPPED
    if running_here:
        return AgentProcess.RUNNING
    if running_here is None and not stopped_while_idle(session):
        return AgentProcess.RUNNING
    return AgentProcess.STOPPED


def agent_process_note(session: Session, process: AgentProcess) -> str | None:
    """The one line a person reads about a stopped agent of a live session, else None."""
    if process is not AgentProcess.STOPPED or session.state.is_terminal:
        return None
    return IDLE_NOTE if stopped_while_idle(session) else NOT_RUNNING_NOTE
