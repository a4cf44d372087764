"""A session's `agent_process` and its note: what this process knows of its agent, else the
durable record of an idle stop."""

from __future__ import annotations

import dataclasses

import pytest

from clarion.domain.agent_process import (
    AGENT_STOPPED,
    IDLE_NOTE,
    NOT_RUNNING_NOTE,
    AgentProcess,
    agent_process,
    agent_process_note,
)
from clarion.domain.models import Session, SessionState
from clarion.domain.wire import session_wire

from .builders import session

STOPPED_WHILE_IDLE = {AGENT_STOPPED: {"reason": "idle", "at": "2026-01-01T00:10:00+00:00"}}


def _in(state: SessionState, **metadata: object) -> Session:
    return dataclasses.replace(session(state), metadata=metadata)


def test_a_session_whose_agent_runs_here_reads_running_without_a_note() -> None:
    live = _in(SessionState.IDLE)
    assert agent_process(live, running_here=True) is AgentProcess.RUNNING
    assert agent_process_note(live, AgentProcess.RUNNING) is None


def test_an_agent_stopped_while_idle_reads_stopped_with_the_idle_note() -> None:
    for running_here in (False, None):
        stopped = _in(SessionState.WAITING_FOR_INPUT, **STOPPED_WHILE_IDLE)
        process = agent_process(stopped, running_here)
        assert process is AgentProcess.STOPPED
        assert agent_process_note(stopped, process) == IDLE_NOTE


def test_an_agent_not_running_for_another_reason_says_it_starts_on_the_next_message() -> None:
    restarted = _in(SessionState.IDLE)
    process = agent_process(restarted, running_here=False)
    assert process is AgentProcess.STOPPED
    assert agent_process_note(restarted, process) == NOT_RUNNING_NOTE


def test_another_replicas_session_reads_running_unless_its_record_says_stopped() -> None:
    assert agent_process(_in(SessionState.RUNNING), running_here=None) is AgentProcess.RUNNING


@pytest.mark.parametrize("running_here", [True, False, None])
def test_a_starting_session_reads_starting(running_here: bool | None) -> None:
    assert agent_process(_in(SessionState.STARTING), running_here) is AgentProcess.STARTING


@pytest.mark.parametrize("state", [SessionState.COMPLETED, SessionState.FAILED])
def test_an_ended_session_reads_stopped_without_a_note(state: SessionState) -> None:
    ended = _in(state, **STOPPED_WHILE_IDLE)
    process = agent_process(ended, running_here=None)
    assert process is AgentProcess.STOPPED
    assert agent_process_note(ended, process) is None


def test_the_session_wire_carries_agent_process_beside_agent() -> None:
    body = session_wire(
        _in(SessionState.IDLE, **STOPPED_WHILE_IDLE), None, None, running_here=False
    )
    assert body["agent"] == "builtin"
    assert body["agent_process"] == "stopped"
    assert body["agent_process_note"] == IDLE_NOTE
