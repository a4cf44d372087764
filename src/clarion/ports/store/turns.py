"""Turns and prompt admission's view of the store (TurnStore)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from clarion.domain.models import (
    Message,
    Session,
    SessionState,
    Task,
    Turn,
    WorkflowStep,
    Workspace,
)
from clarion.domain.turn_outcomes import TurnEnd
from clarion.ports.store.lookups import Lookups
from clarion.ports.store.records import (
    NewMessage,
)


class TurnStore(Lookups, Protocol):
    """Turns and admission: sessions, their turns and transcript, as the orchestrator drives
    agents."""

    async def ensure_workspace(self, name: str) -> Workspace:
        """The workspace called `name`, created if missing (idempotent under races)."""
        ...

    async def create_task(
        self, *, title: str, description: str, workspace_id: str, repository: str | None = None
    ) -> Task:
        """A new task in `backlog`, with no summary yet; `repository` names the configured
        repository its agents work in (None: none)."""
        ...

    async def set_task_step(self, task_id: str, step: WorkflowStep) -> Task:
        """Move the task to `step`; returns it as stored. NotFound if missing."""
        ...

    async def create_session(self, *, task_id: str, agent: str, is_primary: bool) -> Session:
        """A new session of the task, in CREATED."""
        ...

    async def transition_session(
        self,
        session_id: str,
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> Session | None:
        """Set the state if the current one is in `allowed_from` (any non-terminal when None).
        Returns the session as it now stands when it is in `to` (a session already there, with
        `to` allowed, is not rewritten), None when the move is not allowed."""
        ...

    async def create_turn(
        self,
        session_id: str,
        *,
        lifecycle_only: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> Turn:
        """An open turn started now; a conversational one becomes the current turn at once."""
        ...

    async def complete_turn(self, turn_id: str, *, end: TurnEnd | None = None) -> bool:
        """Set completed_at if still open, recording how it ended. Returns whether it applied."""
        ...

    async def get_turn(self, turn_id: str) -> Turn:
        """The turn; NotFound if missing."""
        ...

    async def find_current_turn(self, session_id: str) -> Turn | None:
        """The seed's current turn: authoritative, not lifecycle_only, open first, then newest."""
        ...

    async def add_message(self, new: NewMessage) -> Message:
        """Insert one message (in `new.turn_id`, default the current turn) and return it."""
        ...

    async def append_message_content(self, message_id: str, text: str) -> Message:
        """Append `text` to a streamed message's content; returns it. NotFound if missing."""
        ...

    async def get_message(self, message_id: str) -> Message:
        """One transcript row; NotFound if missing."""
        ...

    async def delete_message(self, session_id: str, message_id: str) -> Message | None:
        """Delete one message; returns it, or None if it did not exist. Never touches turns."""
        ...

    async def list_active_bundle_ids(self, session_id: str) -> list[str]:
        """pending_ids with at least one pending row in the session's current turn."""
        ...

    async def recent_messages(self, session_id: str, limit: int) -> list[Message]:
        """The session's newest `limit` messages, oldest first."""
        ...

    async def remember_acp_session(self, session_id: str, acp_session_id: str) -> bool:
        """Record the agent's ACP session id on the session; False if it was already that."""
        ...

    async def mark_agent_stopped(self, session_id: str) -> Session | None:
        """Record that Clarion stops the session's agent for idleness. Applies only while the
        session is idle by its rows (IDLE or WAITING_FOR_INPUT, no open turn), checked under
        the session lock: the session as it now stands, or None when it did not apply."""
        ...

    async def clear_agent_stopped(self, session_id: str) -> bool:
        """The agent runs again: drop the record of its idle stop. False when there was none."""
        ...
