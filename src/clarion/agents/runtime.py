"""`AcpRuntime`: the `ports.AgentRuntime` that runs ACP agents as subprocesses over stdio.

The only code that spawns agents; constructed by the composition root (wiring) and reached by
services only through the port. One subprocess and one ACP session per Clarion session.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from clarion.agents.process import build_env, spawn
from clarion.config import AgentProfile
from clarion.domain.errors import AgentFailure, NotFound
from clarion.ports import AcpSessionInfo, AgentLaunch, AgentSink

if TYPE_CHECKING:
    from clarion.agents.client import PermissionPolicy
    from clarion.agents.running_agent import RunningAgent

logger = logging.getLogger(__name__)


class AcpRuntime:
    """Starts, prompts, cancels and stops agents; reports what they do to `sink`.

    Use as an async context manager: leaving it stops every agent. Errors: `NotFound` for an
    unknown profile, `AgentFailure` when an agent cannot start or is not running,
    `AgentBusy` for a second prompt while one is running.
    """

    def __init__(
        self,
        profiles: Mapping[str, AgentProfile],
        sink: AgentSink,
        *,
        base_env: Mapping[str, str] | None = None,
        permissions: PermissionPolicy | None = None,
        start_timeout: float = 60.0,
        accept_timeout: float = 30.0,
        stop_grace: float = 2.0,
    ) -> None:
        self._profiles = dict(profiles)
        self._sink = sink
        self._base_env = dict(base_env or {})
        self._permissions = permissions  # None: the sink decides (see _start)
        self._start_timeout = start_timeout
        self._accept_timeout = accept_timeout
        self._stop_grace = stop_grace
        self._agents: dict[str, RunningAgent] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    async def __aenter__(self) -> AcpRuntime:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every agent; later ensure_started calls fail."""
        self._closed = True
        await asyncio.gather(*(self.stop(sid) for sid in list(self._agents)))

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    async def ensure_started(self, launch: AgentLaunch) -> bool:
        sid = launch.session_id
        async with self._lock(sid):
            if self._closed:
                raise AgentFailure("agent runtime is shut down", session_id=sid)
            current = self._agents.get(sid)
            if current is not None and current.is_running:
                return False
            if current is not None:
                del self._agents[sid]
                await current.close(self._stop_grace)
            profile = self._profiles.get(launch.profile)
            if profile is None:
                raise NotFound(f"unknown agent profile {launch.profile!r}", session_id=sid)
            agent = await self._start(profile, launch)
            self._agents[sid] = agent
            return True

    async def _start(self, profile: AgentProfile, launch: AgentLaunch) -> RunningAgent:
        # The ACP library is imported with the first agent, not with the server: its schema
        # (hundreds of pydantic models) is about a third of a server's import time, which a
        # server that never starts an agent need not pay. The import runs in a thread: done
        # on the event loop it would hold every other task for up to a second under load, and
        # a replica whose heartbeat is held that long fences itself.
        if _AGENT_MODULES[-1] not in sys.modules:
            await asyncio.to_thread(load_agent_modules)
        from clarion.agents.client import sink_policy
        from clarion.agents.running_agent import RunningAgent

        if self._permissions is None:
            self._permissions = sink_policy(self._sink)
        sid = launch.session_id
        extra = {"session_id": sid, "profile": profile.name}
        cwd = _absolute(launch.cwd or profile.cwd)
        env = build_env(profile.env, self._base_env)
        try:
            proc = await spawn(profile.command, env, cwd, profile.sandbox)
        except OSError as exc:
            raise AgentFailure(
                f"cannot start agent {profile.name!r} ({' '.join(profile.command)}): {exc}",
                session_id=sid,
            ) from exc
        agent = RunningAgent(session_id=sid, profile=profile.name, proc=proc, sink=self._sink)
        agent.attach(self._permissions)
        timeout = profile.start_timeout or self._start_timeout
        try:
            async with asyncio.timeout(timeout):
                await agent.open_session(
                    mcp_url=launch.mcp_url,
                    mcp_token=launch.mcp_token,
                    cwd=cwd,
                    resume_id=launch.acp_session_id,
                )
        except asyncio.CancelledError:
            # The caller gave up on the start: the agent is nobody's yet, so stop it here.
            await agent.close(self._stop_grace)
            raise
        except (Exception, TimeoutError) as exc:
            timed_out = isinstance(exc, TimeoutError)
            if not timed_out:
                # It usually just exited: let its exit status and last words arrive.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(proc.wait()), self._stop_grace)
            code = proc.returncode
            await agent.close(self._stop_grace)
            if timed_out:
                reason = f"it did not answer within {timeout:g} s"
            elif code is not None:
                reason = f"it exited with code {code}"
            else:
                reason = f"{type(exc).__name__}: {exc}"
            raise AgentFailure(
                f"agent {profile.name!r} did not open a session: {reason}",
                stderr=agent.stderr_text(),
                exit_code=code,
                session_id=sid,
            ) from exc
        logger.info(
            "agent started (pid %s, acp session %s, %s)",
            proc.pid,
            agent.acp_session_id,
            "loaded" if agent.loaded else "new",
            extra=extra,
        )
        return agent

    async def prompt(self, session_id: str, text: str, *, generation: int) -> None:
        agent = self._agents.get(session_id)
        if agent is None:
            raise AgentFailure("no agent is running for this session", session_id=session_id)
        await agent.prompt(text, generation, self._accept_timeout)
        logger.debug(
            "prompt handed to agent", extra={"session_id": session_id, "generation": generation}
        )

    async def cancel(self, session_id: str) -> None:
        """Send session/cancel. If a prompt is running, a `cancel_ack` output tagged with its
        generation follows once it returned, just before its `PromptFinished`."""
        agent = self._agents.get(session_id)
        if agent is None:
            logger.info("cancel for a session with no agent", extra={"session_id": session_id})
            return
        await agent.cancel()

    async def stop(self, session_id: str) -> None:
        async with self._lock(session_id):
            agent = self._agents.pop(session_id, None)
            if agent is not None:
                await agent.close(self._stop_grace)

    def running_count(self) -> int:
        """How many sessions' agent processes run here (a replica's `sessions`). Read on the
        replica's heartbeat thread: the copy of the values is taken at once, so the loop's
        changes to the dict meanwhile cannot break the count."""
        return sum(1 for agent in list(self._agents.values()) if agent.is_running)

    def is_running(self, session_id: str) -> bool:
        agent = self._agents.get(session_id)
        return agent is not None and agent.is_running

    def running_sessions(self) -> frozenset[str]:
        return frozenset(sid for sid, agent in self._agents.items() if agent.is_running)

    def acp_session(self, session_id: str) -> AcpSessionInfo | None:
        agent = self._agents.get(session_id)
        if agent is None or agent.acp_session_id is None:
            return None
        return AcpSessionInfo(session_id=agent.acp_session_id, loaded=agent.loaded)


_AGENT_MODULES = ("clarion.agents.client", "clarion.agents.running_agent")


def load_agent_modules() -> None:
    """Import the ACP side of the runtime (the library and Clarion's client over it)."""
    for name in _AGENT_MODULES:
        importlib.import_module(name)


def _absolute(path: str | None) -> str:
    # ACP's session/new needs an absolute cwd; a relative profile cwd is relative to ours.
    return os.path.abspath(path or os.getcwd())
