"""The agent sink the runtime is given before the services that implement it exist: it
forwards to `AgentEvents` once `clarion.server.wiring.build` has made them (nothing before).
"""

from __future__ import annotations

from clarion.orchestrator.agent_events import AgentEvents
from clarion.ports import AgentExited, AgentOutput, PermissionAsk, PromptFinished


class LateSink:
    """The runtime needs a sink before the services that implement it exist."""

    target: AgentEvents | None = None

    async def on_output(self, output: AgentOutput) -> None:
        if self.target is not None:
            await self.target.on_output(output)

    async def on_prompt_finished(self, finished: PromptFinished) -> None:
        if self.target is not None:
            await self.target.on_prompt_finished(finished)

    async def on_agent_exited(self, exited: AgentExited) -> None:
        if self.target is not None:
            await self.target.on_agent_exited(exited)

    async def on_permission(self, ask: PermissionAsk) -> str | None:
        if self.target is None:
            return None
        return await self.target.on_permission(ask)
