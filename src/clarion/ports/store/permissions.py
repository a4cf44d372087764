"""Permission requests (PermissionStore)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from clarion.domain.models import (
    Message,
    Session,
    SessionState,
    Turn,
)
from clarion.domain.permissions import PermissionStatus
from clarion.ports.store.lookups import Lookups
from clarion.ports.store.records import (
    NewMessage,
    Written,
)


class PermissionStore(Lookups, Protocol):
    """Permission requests (asked, decided once, settled) and agent failures in the transcript.
    `add_message` and `get_message` are TurnStore's, declared again for the notes a request
    leaves in the transcript and the row a decision reads."""

    async def add_message(self, new: NewMessage) -> Message:
        """Insert one message (in `new.turn_id`, default the current turn) and return it."""
        ...

    async def get_message(self, message_id: str) -> Message:
        """One transcript row; NotFound if missing."""
        ...

    async def add_permission_request(
        self, new: NewMessage, *, session_state: SessionState | None = None
    ) -> Written:
        """Insert one permission_request row (in `new.turn_id` or the current turn); with
        `session_state`, also move a non-terminal session there, in the same commit."""
        ...

    async def decide_permission(
        self,
        message_id: str,
        *,
        status: PermissionStatus,
        decision: Mapping[str, Any],
        session_state: SessionState | None = None,
    ) -> tuple[bool, Message, Written | None]:
        """Guarded: record the decision only on a pending request in its session's current
        turn, session not ended (NotFound if no such request). Returns (applied, row as it
        now stands, what the write left); with `session_state`, a session waiting for input
        moves there in the same commit."""
        ...

    async def settle_permissions(
        self, session_id: str, *, status: PermissionStatus, reason: str
    ) -> tuple[Message, ...]:
        """Every pending request of the session -> `status`, `metadata.reason`; changed rows."""
        ...

    async def record_agent_failure(
        self,
        new: NewMessage,
        *,
        error: str,
        session_state: SessionState | None = None,
        turn_metadata: dict[str, object] | None = None,
    ) -> tuple[Message, Session, Turn | None]:
        """The error row, the session's `error` field and (with `session_state`) its move, in
        one commit. With `turn_metadata` the row goes into a new completed lifecycle turn."""
        ...
