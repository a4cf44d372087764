"""The ACP client side of one agent session: receives the agent's streamed updates and its
permission requests. Imported only by `clarion.agents.live`.

Permission requests go through a `PermissionPolicy`; the default refuses every request. This is
the seam where a user-facing permission flow plugs in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from acp.schema import (
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

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
