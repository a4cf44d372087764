"""Agent launches: which profile, which MCP endpoint, which per-session secret.

Secrets live only in memory: an agent process never outlives the server that started it, so a
restart issues new secrets along with new processes. Comparison is constant-time.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable

from clarion.domain.models import Session
from clarion.ports import AgentLaunch


class SessionTokens:
    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}

    def issue(self, session_id: str) -> str:
        token = self._tokens.get(session_id)
        if token is None:
            token = self._tokens[session_id] = secrets.token_urlsafe(32)
        return token

    def verify(self, session_id: str, presented: str | None) -> bool:
        expected = self._tokens.get(session_id)
        if expected is None or presented is None:
            return False
        return hmac.compare_digest(expected.encode(), presented.encode())

    def revoke(self, session_id: str) -> None:
        self._tokens.pop(session_id, None)


class Launcher:
    """Builds the launch description of a session's agent."""

    def __init__(
        self,
        tokens: SessionTokens,
        base_url: Callable[[], str],
        prepare_tools: Callable[[str], None] = lambda profile: None,
    ) -> None:
        self._tokens = tokens
        self._base_url = base_url
        self._prepare_tools = prepare_tools

    def launch_for(self, session: Session, *, cwd: str | None = None) -> AgentLaunch:
        # The agent's tool endpoint gets ready while the agent process starts, not when the
        # agent first calls it (`prepare_tools` gets the profile's name).
        self._prepare_tools(session.agent)
        return AgentLaunch(
            session_id=session.id,
            profile=session.agent,
            mcp_url=f"{self._base_url()}/mcp/sessions/{session.id}",
            mcp_token=self._tokens.issue(session.id),
            acp_session_id=session.acp_session_id,
            cwd=cwd,
        )
