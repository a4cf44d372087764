"""What the store's methods take and return (frozen records)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clarion.domain.models import (
    Bundle,
    Message,
    PendingAction,
    Session,
    StatusSummary,
    Workspace,
)
from clarion.domain.waiting import Deadlines


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
    task_description: str = ""
    # What the agent last said in the session (its newest message), so the person has the
    # conversation's thread without opening it; None when it has said nothing yet.
    last_agent_message: str | None = None


@dataclass(frozen=True, slots=True)
class QueuedDelivery:
    """One delivery in the outbox (a webhook POST, an email, a Slack message): `url` is the
    webhook's URL or the channel's key, `body` the exact text to send (and a webhook's to sign)."""

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
    # A question's deadline row, when the write asked it under a waiting policy.
    deadline: DeadlineRecord | None = None


@dataclass(frozen=True, slots=True)
class DeadlineRecord:
    """A question's waiting-policy row: its timers still to fire (`deadlines`, whose fired
    timers read None), what already fired, and the earliest time anything is due."""

    pending_id: str
    session_id: str
    task_id: str
    deadlines: Deadlines
    reminders: int
    escalated_at: datetime | None
    expired_at: datetime | None
    # The expiry as scheduled, fired or not (the bundle read shows it).
    scheduled_expiry: datetime | None
    next_due_at: datetime | None


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What a response claim did. `claimed` empty means nothing applied (lost race, stale)."""

    claimed: tuple[Message, ...]
    bundle: Bundle


@dataclass(frozen=True, slots=True)
class ChangedBundle:
    """One bundle a startup transition changed: whose it is and how many of its rows."""

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
