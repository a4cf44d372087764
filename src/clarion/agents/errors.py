"""Errors the agent runtime raises to its callers. Imported by `clarion.agents` modules only;
services see them through the port as `ClarionError` (they may not import this package)."""

from __future__ import annotations

from clarion.domain.errors import AgentFailure, Conflict


class AgentUnavailable(AgentFailure):
    """The agent process is not running, could not be started, or did not take the request."""


class AgentBusy(Conflict):
    """A prompt is already running in this session; ACP allows one at a time."""

    code = "agent_busy"
