"""The ACP client side of one agent session: receives the agent's streamed updates and its
permission requests. Imported only by `clarion.agents.running_agent`.

Permission requests go through a `PermissionPolicy`. The runtime's default hands them to its
sink (`AgentSink.on_permission`), which decides them by profile policy or asks the person.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from clarion.ports import AgentSink, PermissionAsk

logger = logging.getLogger(__name__)


class PermissionPolicy(Protocol):
    async def __call__(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        """Decide an agent's permission request for Clarion session `session_id`."""
        ...


async def deny_all(
    session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
) -> RequestPermissionResponse:
    logger.warning(
        "refused agent permission request %r (no permission flow yet)",
        tool_call.title,
        extra={"session_id": session_id, "tool_call_id": tool_call.tool_call_id},
    )
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def sink_policy(sink: AgentSink) -> PermissionPolicy:
    """A policy that lets the sink decide, translating ACP types both ways."""

    async def decide(
        session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        ask = PermissionAsk(
            session_id=session_id,
            tool_call_id=tool_call.tool_call_id,
            title=tool_call.title or "",
            kind=tool_call.kind or "other",
            raw_input=tool_call.raw_input,
            options=tuple((o.option_id, o.name, o.kind) for o in options),
        )
        try:
            chosen = await sink.on_permission(ask)
        except Exception:
            # Refusing is the safe answer when the request could not even be recorded.
            logger.exception(
                "permission request failed; answered cancelled",
                extra={"session_id": session_id, "tool_call_id": tool_call.tool_call_id},
            )
            chosen = None
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    return decide


class SessionClient:
    """Handlers the ACP SDK calls for one agent connection (it has exactly one session)."""

    def __init__(
        self, session_id: str, on_update: Callable[[Any], None], permissions: PermissionPolicy
    ) -> None:
        self._session_id = session_id
        self._on_update = on_update
        self._permissions = permissions

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        # The SDK runs every notification in its own task; recording before the first await is
        # what keeps the updates in arrival order.
        self._on_update(update)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        return await self._permissions(self._session_id, tool_call, options)
