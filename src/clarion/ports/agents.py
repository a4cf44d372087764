"""The agent seam: the runtime services drive agents through, and what it reports back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class AgentOutput:
    """One streamed frame from an agent, tagged with the prompt generation that caused it."""

    session_id: str
    generation: int
    kind: str  # "message" | "thought" | "tool_call" | "tool_call_update" | "cancel_ack"
    text: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PromptFinished:
    session_id: str
    generation: int
    stop_reason: str  # end_turn | cancelled | error | ...
    error: str | None = None
    # False when the prompt failed because the agent process is gone (or going): its exit is
    # reported separately, as `AgentExited`, unless Clarion stopped it.
    agent_alive: bool = True
    stderr: str = ""  # the agent's recent stderr, for an error


@dataclass(frozen=True, slots=True)
class AgentExited:
    """The agent process exited on its own (not stopped by Clarion)."""

    session_id: str
    exit_code: int | None
    stderr: str = ""


@dataclass(frozen=True, slots=True)
class PermissionAsk:
    """An agent's `session/request_permission`, in Clarion's terms."""

    session_id: str
    tool_call_id: str
    title: str
    kind: str
    raw_input: Any
    options: tuple[tuple[str, str, str], ...]  # (option_id, name, kind)


class AgentSink(Protocol):
    """Where a runtime reports what its agents do. Called in arrival order per session."""

    async def on_output(self, output: AgentOutput) -> None: ...
    async def on_prompt_finished(self, finished: PromptFinished) -> None: ...
    async def on_agent_exited(self, exited: AgentExited) -> None: ...
    async def on_permission(self, ask: PermissionAsk) -> str | None:
        """Decide a permission request: the chosen option id, or None for cancelled."""
        ...


@dataclass(frozen=True, slots=True)
class AgentLaunch:
    session_id: str
    profile: str
    mcp_url: str
    mcp_token: str
    # The ACP session the agent had before a restart: loaded (session/load) when the agent
    # supports it, so it keeps its conversation.
    acp_session_id: str | None = None
    # The task's worktree, when it has one: the agent's working directory, overriding the
    # profile's `cwd`.
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class AcpSessionInfo:
    """The running agent's ACP session: its id, and whether it was loaded from before (the
    agent has its earlier conversation) rather than created new."""

    session_id: str
    loaded: bool


class AgentRuntime(Protocol):
    """The only way services reach agent processes."""

    async def ensure_started(self, launch: AgentLaunch) -> bool:
        """Start the agent process and ACP session if not running. True if it started now."""
        ...

    async def prompt(self, session_id: str, text: str, *, generation: int) -> None:
        """Hand a prompt to the running agent. Returns once the agent accepted it (the request
        is on its way to a live process); the turn's end arrives via on_prompt_finished.
        Raises if the agent is not running or refuses."""
        ...

    async def cancel(self, session_id: str) -> None: ...

    async def stop(self, session_id: str) -> None: ...

    def is_running(self, session_id: str) -> bool: ...

    def running_sessions(self) -> frozenset[str]:
        """The sessions whose agent runs here, at this moment."""
        ...

    def acp_session(self, session_id: str) -> AcpSessionInfo | None:
        """The running agent's ACP session, or None when no agent runs for the session."""
        ...


ProfileResolver = Callable[[str], Awaitable[bool]]
