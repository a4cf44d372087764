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
    """Time for the services: wall time for records, monotonic time and sleeping for timers
    (so a test's manual clock drives every deadline)."""

    def now(self) -> datetime:
        """Current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences mean anything."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once `seconds` passed on this clock."""
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
class InboxEntry:
    """One item a person may act on now: a clarification bundle (`id` is its pending id) or a
    permission request (`id` is its message id), with its task's title and when it was asked."""

    kind: str  # "clarification" | "permission"
    id: str
    session_id: str
    task_id: str
    task_title: str
    created_at: datetime
    # A permission request's row metadata (tool call, options); empty for a clarification,
    # whose questions and state come from its bundle.
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueuedDelivery:
    """One webhook delivery in the outbox: `body` is the exact text to send and sign."""

    id: str
    url: str
    event: str
    body: str
    attempts: int
    next_attempt_at: datetime
    delivered_at: datetime | None = None
    gave_up_at: datetime | None = None
    last_error: str | None = None


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
    # For a kept reservation: no output references it, so whether the agent got the prompt
    # is unknown and its answer reads `delivery: "ambiguous"`.
    ambiguous: bool = False


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


class Lookups(Protocol):
    """Reads shared by every consumer: the things a request names."""

    async def get_task(self, task_id: str) -> Task:
        """The task; NotFound if missing."""
        ...

    async def get_session(self, session_id: str) -> Session:
        """The session; NotFound if missing."""
        ...

    async def list_sessions(self, task_id: str) -> list[Session]:
        """The task's sessions, oldest first."""
        ...

    async def find_bundle(self, pending_id: str) -> Bundle | None:
        """Every row carrying the pending id, with its session and current turn, from one
        snapshot; None when no row has it.
        """
        ...

    async def sessions_with_active_clarification(self, task_id: str) -> list[str]:
        """Ids of the task's non-terminal sessions with a pending row in their current turn."""
        ...


class AnswerStore(Lookups, Protocol):
    """The answer path: asking, claiming, confirming, restoring, detaching, the detached
    resume's reservation and the person's resend. Every write holds the session's lock; each
    returns what it changed, so a guarded update that did not apply is an empty tuple, None or
    False, never an exception."""

    async def session_with_current_turn(self, session_id: str) -> tuple[Session, str | None]:
        """The session (NotFound if missing) and its current turn id, from one read."""
        ...

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
        delivered: bool = False,
    ) -> Written | None:
        """Retire the delivery intent on exactly these rows; None if any lacks it. With
        `session_state`, a confirmation that applies also moves the session (from any
        non-terminal state) to it in the same transaction, saving a commit. With
        `delivered`, the rows also record `delivery: "delivered"` (the agent has it)."""
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

    async def reserve_successor(
        self, session_id: str, *, source_turn_id: str, pending_id: str, message_ids: Sequence[str]
    ) -> Turn:
        """An unpublished successor turn carrying kandev's dispatch keys (the recovery identity:
        source turn, pending id, exactly the claimed message ids). Conflict when a reservation is
        already live, the session ended, or `source_turn_id` is no longer current; InvalidInput for
        empty ids. Not current-turn authority until attempted or referenced.
        """
        ...

    async def mark_attempted(self, turn_id: str) -> bool:
        """Set `prompt_dispatch_attempted` on a live reservation (the at-most-once boundary);
        False when the turn is not one.
        """
        ...

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

    async def claim_resend(self, pending_id: str) -> tuple[Message, ...]:
        """Mark the bundle's `delivery: "ambiguous"` rows `resend_pending`; () (nothing
        written) when none is ambiguous, a resend is already in flight, or the session
        ended. Returns the claimed rows."""
        ...

    async def release_resend(self, pending_id: str) -> tuple[Message, ...]:
        """A resend the agent did not accept: drop `resend_pending`, so the rows read
        ambiguous again. Returns the rows it changed."""
        ...

    async def finish_resend(self, pending_id: str, turn_id: str) -> tuple[Message, ...]:
        """The agent accepted the resend started in `turn_id`: the rows in flight record
        `delivery: "delivered"` and `resent_turn_id`. Returns the rows it changed."""
        ...


class TurnStore(Lookups, Protocol):
    """Turns and admission: sessions, their turns and transcript, as the orchestrator drives
    agents."""

    async def ensure_workspace(self, name: str) -> Workspace:
        """The workspace called `name`, created if missing (idempotent under races)."""
        ...

    async def create_task(self, *, title: str, description: str, workspace_id: str) -> Task:
        """A new task in `backlog`, with no summary yet."""
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

    async def complete_turn(
        self, turn_id: str, *, metadata_patch: Mapping[str, Any] | None = None
    ) -> bool:
        """Set completed_at if still open. Returns whether it applied."""
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


class RecoveryStore(Lookups, Protocol):
    """Startup recovery, in the contract's order; every step harmless to repeat."""

    async def reconcile_reservations(self) -> list[ReservationRecovery]:
        """Startup, one transaction: every unpublished reservation is kept (attempted or
        referenced: rows finalized, `delivery` recorded, outbox marker set) or deleted with exactly
        its claimed rows restored while current. Raises CorruptReservationError, changing nothing,
        when any reservation's recovery metadata is malformed.
        """
        ...

    async def reconcile_intents(self) -> list[IntentRecovery]:
        """Startup, one transaction: every delivery intent no reservation owns is restored to
        pending while its turn is current and the session live, else retired as terminal history.
        """
        ...

    async def release_resends(self) -> list[str]:
        """Startup: every resend a stopped process left in flight reads ambiguous again.
        Returns the pending ids released."""
        ...

    async def mark_unread_live_answers(self) -> list[str]:
        """Startup, before open turns are completed: a live-delivered answer in an open turn
        after which the agent wrote nothing may never have reached it (the process died
        between the confirmation and the tool result); its rows read `delivery: "ambiguous"`.
        Returns the pending ids marked; a repeat marks nothing new."""
        ...

    async def expire_stale_permissions(self, *, reason: str) -> tuple[Message, ...]:
        """Startup: every request the previous process left pending -> expired; changed rows."""
        ...

    async def list_outbox_turns(self) -> list[Turn]:
        """Kept successors whose `session.turn.started` is still to be published (outbox marker)."""
        ...

    async def clear_outboxes(self, turn_ids: Sequence[str]) -> list[str]:
        """Drop the outbox marker of these turns, in one transaction; the ids it cleared."""
        ...

    async def detach_all_bundles(self) -> tuple[DetachedBundle, ...]:
        """`detach_bundles` for every current-turn pending bundle not yet detached, in one
        transaction. Returns the bundles it changed, by (session_id, pending_id), so a repeat
        returns (). Only their keys: startup never needs the rows themselves, and reading
        thousands of them back would cost more than marking them."""
        ...

    async def complete_open_turns(
        self, *, metadata_patch: Mapping[str, Any] | None = None
    ) -> list[Turn]:
        """`complete_turn` for every open authoritative turn, across sessions, in one transaction.
        Returns the turns as completed."""
        ...

    async def list_sessions_in_states(self, states: Sequence[SessionState]) -> list[Session]:
        """Every session in one of `states`, across tasks."""
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


class ReadStore(Lookups, Protocol):
    """What clients read: tasks, transcripts, pending projections, summaries and epochs."""

    async def get_workspace(self, workspace_id: str) -> Workspace:
        """The workspace; NotFound if missing."""
        ...

    async def list_tasks(self, workspace_ids: Sequence[str] | None = None) -> list[Task]:
        """Tasks oldest first, of these workspaces only (all when None)."""
        ...

    async def list_visible_turns(self, session_id: str) -> list[Turn]:
        """History ascending by started_at, created_at, id; unpublished reservations hidden
        unless a message references them. Private dispatch keys are stripped."""
        ...

    async def list_messages(
        self, session_id: str, *, after: str | None = None, limit: int = 100
    ) -> MessagePage:
        """One page of the transcript, oldest first, after message `after`; `next` is the
        id to pass for the following page, None on the last.
        """
        ...

    async def pending_actions(self, session_ids: Sequence[str]) -> dict[str, PendingAction | None]:
        """Per session: clarification if a current-turn pending row exists, else permission if
        the newest current-turn permission request is pending; None when the session is
        terminal or clean."""
        ...

    async def inbox_entries(self, workspace_ids: Sequence[str] | None = None) -> list[InboxEntry]:
        """Oldest first: every bundle with a pending row in its session's current turn and
        every session's newest current-turn permission request while it is pending, of
        non-terminal sessions of these workspaces' tasks (all when None). The same rule as
        `pending_actions`, item by item; whether a bundle is claimable is the caller's call."""
        ...

    async def find_summary(self, task_id: str) -> StatusSummary | None:
        """The stored task summary (a cache), or None when none was written yet."""
        ...

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


class AccessStore(Lookups, Protocol):
    """Access control: API tokens and their owners."""

    async def issue_api_token(self, *, user: str, workspace: str, token_hash: str) -> TokenOwner:
        """Create the user and the workspace if missing, make the user a member (once), and
        store `token_hash` (the token itself is never stored). One transaction."""
        ...

    async def find_token_owner(self, token_hash: str) -> TokenOwner | None:
        """The owner of the token with this hash, with current memberships; None if unknown."""
        ...


class PermissionStore(Lookups, Protocol):
    """Permission requests (asked, decided once, settled) and agent failures in the transcript."""

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


class WebhookStore(Protocol):
    """The webhook outbox, as the deliverer sees it. Deliveries are queued by the writes that
    cause their events, in the same transaction; nothing else adds them."""

    async def due_webhook_deliveries(self, now: datetime, limit: int) -> list[QueuedDelivery]:
        """Up to `limit` deliveries neither delivered nor given up whose next attempt is due at
        `now`, soonest first."""
        ...

    async def next_webhook_attempt_at(self) -> datetime | None:
        """When the soonest open delivery is due; None when none is open."""
        ...

    async def record_webhook_attempt(
        self,
        delivery_id: str,
        *,
        attempts_before: int,
        delivered: bool,
        next_attempt_at: datetime | None = None,
        error: str | None = None,
    ) -> bool:
        """Guarded: applies only to an open delivery that still has `attempts_before` attempts.
        Counts the attempt and marks it delivered, or due again at `next_attempt_at`, or (with
        neither) given up. Returns whether it applied."""
        ...


class Store(
    AnswerStore,
    TurnStore,
    RecoveryStore,
    ReadStore,
    AccessStore,
    PermissionStore,
    WebhookStore,
    Protocol,
):
    """Everything durable. Only the composition root and the store's own tests see the whole;
    each service is given the narrow protocol of its consumer above. Every method is one
    transaction; writes are guarded updates."""
