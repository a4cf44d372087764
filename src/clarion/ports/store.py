"""The storage seam: the Store protocol, its result types, and the Clock it writes times with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from clarion.domain.models import (
    Bundle,
    ClarificationResponse,
    Message,
    PendingAction,
    Session,
    SessionState,
    StatusSummary,
    Task,
    Turn,
    WorkflowStep,
    Workspace,
)
from clarion.domain.permissions import PermissionStatus


class Clock(Protocol):
    def now(self) -> datetime:
        """Current time, timezone-aware UTC."""
        ...


# --------------------------------------------------------------------------- store results


@dataclass(frozen=True, slots=True)
class MessagePage:
    messages: tuple[Message, ...]
    total: int
    next_after: str | None


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A row to insert. `turn_id` None means: the session's current turn (error if none)."""

    session_id: str
    author_type: str
    type: str
    content: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    turn_id: str | None = None
    requests_input: bool = False


@dataclass(frozen=True, slots=True)
class SummaryInputs:
    """What a task summary is computed from, read in one transaction."""

    summary: StatusSummary | None
    sessions: tuple[Session, ...]
    actions: Mapping[str, PendingAction | None]


@dataclass(frozen=True, slots=True)
class Written:
    """What a write that applied left behind: its rows as they now stand and, when the write
    was also asked to move the session, the session as it now stands (None when it could not
    move there: it had ended). Lets the caller announce both without reading them again."""

    rows: tuple[Message, ...]
    session: Session | None = None


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What a response claim did. `claimed` empty means nothing applied (lost race, stale)."""

    claimed: tuple[Message, ...]
    bundle: Bundle


@dataclass(frozen=True, slots=True)
class DetachedBundle:
    """One bundle startup recovery detached: whose it is and how many of its rows changed."""

    session_id: str
    task_id: str
    pending_id: str
    rows: int


@dataclass(frozen=True, slots=True)
class ReservationRecovery:
    """One startup decision about an unpublished successor reservation."""

    turn_id: str
    session_id: str
    pending_id: str | None
    kept: bool  # True: attempted or referenced, kept as authoritative; False: deleted
    message_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IntentRecovery:
    """One startup decision about a response-delivery intent no reservation owns."""

    pending_id: str
    session_id: str
    restored: bool  # True: rows pending again; False: intent cleared, terminal history kept
    message_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TokenOwner:
    """Who an API token belongs to: the user and their workspaces, oldest membership first."""

    user_id: str
    user_name: str
    workspaces: tuple[Workspace, ...]


# --------------------------------------------------------------------------- store


class Store(Protocol):
    """Durable state. Every method is one transaction; writes are guarded updates."""

    # workspaces and tasks
    async def ensure_workspace(self, name: str) -> Workspace: ...
    async def get_workspace(self, workspace_id: str) -> Workspace: ...
    async def create_task(self, *, title: str, description: str, workspace_id: str) -> Task: ...
    async def get_task(self, task_id: str) -> Task: ...
    async def list_tasks(self, workspace_ids: Sequence[str] | None = None) -> list[Task]: ...
    async def set_task_step(self, task_id: str, step: WorkflowStep) -> Task: ...

    # sessions
    async def create_session(self, *, task_id: str, agent: str, is_primary: bool) -> Session: ...
    async def get_session(self, session_id: str) -> Session: ...
    async def list_sessions(self, task_id: str) -> list[Session]: ...
    async def list_sessions_in_states(self, states: Sequence[SessionState]) -> list[Session]: ...
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

    async def session_with_current_turn(self, session_id: str) -> tuple[Session, str | None]:
        """The session (NotFound if missing) and its current turn id, from one read."""
        ...

    # turns
    async def create_turn(
        self,
        session_id: str,
        *,
        lifecycle_only: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> Turn: ...
    async def complete_turn(
        self, turn_id: str, *, metadata_patch: Mapping[str, Any] | None = None
    ) -> bool:
        """Set completed_at if still open. Returns whether it applied."""
        ...

    async def get_turn(self, turn_id: str) -> Turn: ...
    async def find_current_turn(self, session_id: str) -> Turn | None:
        """The seed's current turn: authoritative, not lifecycle_only, open first, then newest."""
        ...

    async def list_visible_turns(self, session_id: str) -> list[Turn]:
        """History ascending by started_at, created_at, id; unpublished reservations hidden
        unless a message references them. Private dispatch keys are stripped."""
        ...

    async def list_open_turns(self) -> list[Turn]:
        """Authoritative turns with completed_at NULL, across sessions (startup)."""
        ...

    # messages
    async def add_message(self, new: NewMessage) -> Message: ...
    async def append_message_content(self, message_id: str, text: str) -> Message: ...
    async def get_message(self, message_id: str) -> Message: ...
    async def list_messages(
        self, session_id: str, *, after: str | None = None, limit: int = 100
    ) -> MessagePage: ...
    async def delete_message(self, session_id: str, message_id: str) -> Message | None:
        """Delete one message; returns it, or None if it did not exist. Never touches turns."""
        ...

    # clarification bundles
    async def create_bundle(
        self,
        session_id: str,
        rows: Sequence[NewMessage],
        *,
        turn_id: str | None = None,
        session_state: SessionState | None = None,
    ) -> Written:
        """Insert all rows of one bundle in the given (default: current) turn, or none; with
        `session_state`, also move a non-terminal session there, in the same commit."""
        ...

    async def find_bundle(self, pending_id: str) -> Bundle | None: ...
    async def list_active_bundle_ids(self, session_id: str) -> list[str]:
        """pending_ids with at least one pending row in the session's current turn."""
        ...

    async def claim_response(
        self, response: ClarificationResponse, *, now: datetime
    ) -> ClaimResult:
        """Claim the bundle's pending rows in the current turn of a non-terminal session:
        write the provisional status (answered/rejected), the per-row response, and
        `response_delivery_pending=true`. Terminal siblings are untouched."""
        ...

    async def confirm_delivery(
        self,
        pending_id: str,
        message_ids: Sequence[str],
        *,
        session_state: SessionState | None = None,
    ) -> Written | None:
        """Retire the delivery intent on exactly these rows; None if any lacks it. With
        `session_state`, a confirmation that applies also moves the session (from any
        non-terminal state) to it in the same transaction, saving a commit."""
        ...

    async def restore_claim(self, pending_id: str, message_ids: Sequence[str]) -> bool:
        """Put exactly these claimed rows back to pending, only while each still carries the
        intent, its turn is current and the session is not terminal."""
        ...

    async def detach_bundles(
        self, session_id: str, *, pending_id: str | None = None
    ) -> tuple[Message, ...]:
        """Mark current-turn pending, not-yet-detached rows `agent_disconnected`. Returns only
        the rows it changed, so a repeat returns ()."""
        ...

    async def expire_bundles(self, session_id: str) -> tuple[Message, ...]:
        """Current-turn pending rows -> status expired (+ agent_disconnected). Changed rows only.
        Applies whatever the session's state, since it runs as the session terminates."""
        ...

    async def cancel_bundle(self, pending_id: str) -> tuple[Message, ...]:
        """Pending rows of the bundle -> cancelled. Changed rows only."""
        ...

    # permission requests
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

    async def expire_stale_permissions(self, *, reason: str) -> tuple[Message, ...]:
        """Startup: every request the previous process left pending -> expired; changed rows."""
        ...

    # agent failures
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

    # detached-answer successor reservations
    async def reserve_successor(
        self, session_id: str, *, source_turn_id: str, pending_id: str, message_ids: Sequence[str]
    ) -> Turn: ...
    async def mark_attempted(self, turn_id: str) -> bool: ...
    async def publish_successor(
        self,
        turn_id: str,
        *,
        pending_id: str,
        message_ids: Sequence[str],
        session_state: SessionState | None = None,
    ) -> Written | None:
        """Clear the dispatch keys on the turn and the intents on exactly the claimed rows
        (None if the turn is no longer that reservation);
        with `session_state`, also move a non-terminal session there, in the same commit."""
        ...

    async def rollback_successor(self, turn_id: str) -> bool:
        """Delete the reservation if no message references it. True if deleted."""
        ...

    async def find_live_reservation(self, session_id: str) -> Turn | None:
        """A reservation still carrying prompt_dispatch_pending, if any."""
        ...

    # projections
    async def pending_actions(self, session_ids: Sequence[str]) -> dict[str, PendingAction | None]:
        """Per session: clarification if a current-turn pending row exists, else permission if
        the newest current-turn permission request is pending; None when the session is
        terminal or clean."""
        ...

    async def sessions_with_active_clarification(self, task_id: str) -> list[str]: ...

    # summaries and meta
    async def find_summary(self, task_id: str) -> StatusSummary | None: ...
    async def summary_inputs(self, task_id: str) -> SummaryInputs:
        """The task's stored summary, its sessions and their pending actions, from one snapshot
        (the summary read first, see `clarion.projection.summaries`)."""
        ...

    async def cas_summary(
        self, task_id: str, *, expected_revision: int | None, data: Mapping[str, Any]
    ) -> StatusSummary | None:
        """Write `data` with revision expected+1 (1 when expected is None and no row exists).
        Returns the new summary, or None if the stored revision was not `expected_revision`."""
        ...

    async def next_epoch(self) -> int:
        """Allocate the next projection epoch (starts at 1, only grows)."""
        ...

    # access control (users, memberships, API tokens)
    async def issue_api_token(self, *, user: str, workspace: str, token_hash: str) -> TokenOwner:
        """Create the user and the workspace if missing, make the user a member (once), and
        store `token_hash` (the token itself is never stored). One transaction."""
        ...

    async def find_token_owner(self, token_hash: str) -> TokenOwner | None:
        """The owner of the token with this hash, with current memberships; None if unknown."""
        ...

    # startup
    async def reconcile_reservations(self) -> list[ReservationRecovery]: ...
    async def reconcile_intents(self) -> list[IntentRecovery]: ...
    async def list_outbox_turns(self) -> list[Turn]: ...
    async def clear_outbox(self, turn_id: str) -> bool: ...
    async def list_detachable_bundles(self) -> list[tuple[str, str]]:
        """(session_id, pending_id) of current-turn pending bundles not yet detached."""
        ...

    async def clear_outboxes(self, turn_ids: Sequence[str]) -> list[str]:
        """`clear_outbox` for many turns in one transaction; the ids it cleared."""
        ...

    async def detach_all_bundles(self) -> tuple[DetachedBundle, ...]:
        """`detach_bundles` for every bundle `list_detachable_bundles` lists, in one
        transaction. Returns the bundles it changed, by (session_id, pending_id), so a repeat
        returns (). Only their keys: startup never needs the rows themselves, and reading
        thousands of them back would cost more than marking them."""
        ...

    async def complete_open_turns(
        self, *, metadata_patch: Mapping[str, Any] | None = None
    ) -> list[Turn]:
        """`complete_turn` for every turn `list_open_turns` lists, in one transaction.
        Returns the turns as completed."""
        ...

    async def transition_sessions(
        self,
        session_ids: Sequence[str],
        to: SessionState,
        *,
        allowed_from: Sequence[SessionState] | None = None,
    ) -> list[str]:
        """`transition_session` for many sessions in one transaction; the ids that moved."""
        ...
