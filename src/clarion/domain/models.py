"""Frozen records of the durable model and the enums of its states.

Field and metadata key names follow kandev so a kandev-shaped client works unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

JsonObject = Mapping[str, Any]


class SessionState(StrEnum):
    CREATED = "CREATED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    IDLE = "IDLE"
    WAITING_FOR_INPUT = "WAITING_FOR_INPUT"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_SESSION_STATES


TERMINAL_SESSION_STATES = frozenset(
    {SessionState.COMPLETED, SessionState.FAILED, SessionState.CANCELLED}
)


class WorkflowStep(StrEnum):
    BACKLOG = "backlog"
    IN_PROGRESS = "in_progress"
    REVIEW = "review"
    DONE = "done"


class WorktreeState(StrEnum):
    """A task's git worktree: `creating` is written before `git worktree add` runs (a crash
    leaves it for repair), `ready` once it is complete, `removed` once archived."""

    CREATING = "creating"
    READY = "ready"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class Worktree:
    """Where a task's agents work: `path` on the branch `branch`, made from `base`."""

    path: str
    branch: str
    base: str
    state: WorktreeState


class AuthorType(StrEnum):
    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"


class MessageType(StrEnum):
    MESSAGE = "message"
    THOUGHT = "thought"
    TOOL_CALL = "tool_call"
    CLARIFICATION_REQUEST = "clarification_request"
    PERMISSION_REQUEST = "permission_request"
    ERROR = "error"


class ClarificationStatus(StrEnum):
    """`metadata.status` of a clarification row. A missing or empty status reads as PENDING."""

    PENDING = "pending"
    ANSWERED = "answered"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class BundleState(StrEnum):
    """The five operational states of one clarification bundle."""

    ACTIVE_LIVE = "active_live"
    ACTIVE_DETACHED = "active_detached"
    DELIVERY_CLAIMED = "delivery_claimed"
    TERMINAL = "terminal"
    SUPERSEDED_HISTORY = "superseded_history"


class Receipt(StrEnum):
    """Whether the agent received a bundle's winning response. The wire and the rows spell
    it `delivery` (`GET /clarification`, MetaKey.DELIVERY), as the contract names the field.

    No value (null) while nothing was delivered: the bundle is open, was rejected without a
    resume, or ended without a response."""

    DELIVERED = "delivered"
    # The process stopped between the attempt marker and the agent's acknowledgement: the
    # agent may or may not have the answer. Only the person can decide to send it again.
    AMBIGUOUS = "ambiguous"


class PendingAction(StrEnum):
    CLARIFICATION = "clarification"
    PERMISSION = "permission"


class MetaKey:
    """Metadata keys, kept as kandev spells them."""

    # clarification rows
    PENDING_ID = "pending_id"
    QUESTION_ID = "question_id"
    QUESTION = "question"
    QUESTION_INDEX = "question_index"
    QUESTION_TOTAL = "question_total"
    CONTEXT = "context"
    STATUS = "status"
    RESPONSE = "response"
    REJECT_REASON = "reject_reason"
    AGENT_DISCONNECTED = "agent_disconnected"
    RESPONSE_DELIVERY_PENDING = "response_delivery_pending"
    PARENT_QUESTION = "parent_question"
    # How the winning response reached the agent (Clarion's own key): "delivered", or
    # "ambiguous" when a restart left its dispatch unknown (see Receipt).
    DELIVERY = "delivery"
    # Clarion's own keys for a waiting policy: set on a bundle asked under one that can fire
    # (its deadlines are in `clarification_deadlines`), and on rows its expiry answered.
    WAITING = "waiting_policy"
    ANSWERED_BY = "answered_by"
    # An explicit resend of an ambiguous answer: in flight, and the turn it started.
    RESEND_PENDING = "resend_pending"
    RESENT_TURN_ID = "resent_turn_id"
    # sessions (Clarion's own key): the agent's ACP session id, for session/load on restart
    ACP_SESSION_ID = "acp_session_id"
    # turns
    LIFECYCLE_ONLY = "lifecycle_only"
    INTERRUPTED = "interrupted"
    STOP_REASON = "stop_reason"  # the agent's ACP stop reason for the prompt
    ERROR = "error"  # why the prompt failed, when it did
    AGENT_CONTEXT = "agent_context"  # what the agent last said, kept for a later recap
    PROMPT_DISPATCH_PENDING = "prompt_dispatch_pending"
    PROMPT_DISPATCH_ATTEMPTED = "prompt_dispatch_attempted"
    PROMPT_DISPATCH_PENDING_ID = "prompt_dispatch_clarification_pending_id"
    PROMPT_DISPATCH_TURN_ID = "prompt_dispatch_clarification_turn_id"
    PROMPT_DISPATCH_MESSAGE_IDS = "prompt_dispatch_clarification_message_ids"
    PROMPT_DISPATCH_START_EVENT_PENDING = "prompt_dispatch_start_event_pending"


# Private dispatch keys: cleared together, never shown in public turn events or history.
DISPATCH_KEYS: tuple[str, ...] = (
    MetaKey.PROMPT_DISPATCH_PENDING,
    MetaKey.PROMPT_DISPATCH_ATTEMPTED,
    MetaKey.PROMPT_DISPATCH_PENDING_ID,
    MetaKey.PROMPT_DISPATCH_TURN_ID,
    MetaKey.PROMPT_DISPATCH_MESSAGE_IDS,
    MetaKey.PROMPT_DISPATCH_START_EVENT_PENDING,
)


@dataclass(frozen=True, slots=True)
class Workspace:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    title: str
    description: str
    workspace_id: str
    workflow_step: WorkflowStep
    created_at: datetime
    updated_at: datetime
    # The configured repository its agents work in (docs/workspaces.md), and its worktree.
    repository: str | None = None
    worktree: Worktree | None = None


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    task_id: str
    agent: str
    state: SessionState
    is_primary: bool
    created_at: datetime
    updated_at: datetime
    metadata: JsonObject = field(default_factory=dict)
    # Cluster mode: the replica that runs the session's agent; None on a single server.
    owner_replica_id: str | None = None

    @property
    def acp_session_id(self) -> str | None:
        """The agent's ACP session id recorded when it started, for session/load."""
        value = self.metadata.get(MetaKey.ACP_SESSION_ID)
        return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class Turn:
    id: str
    session_id: str
    task_id: str
    started_at: datetime
    completed_at: datetime | None
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    session_id: str
    task_id: str
    turn_id: str | None
    author_type: AuthorType
    type: MessageType
    content: str
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime
    requests_input: bool = False

    @property
    def pending_id(self) -> str | None:
        """The clarification bundle this row belongs to, if any."""
        value = self.metadata.get(MetaKey.PENDING_ID)
        return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class Revision:
    """Orders pending projections: compare the epoch numerically, then the sequence."""

    epoch: int
    sequence: int

    def as_wire(self) -> dict[str, Any]:
        return {"epoch": str(self.epoch), "sequence": self.sequence}


@dataclass(frozen=True, slots=True)
class StatusSummary:
    """A task's cached status summary. `data` holds every key, including ones we do not own."""

    task_id: str
    revision: int
    data: JsonObject
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class QuestionOption:
    option_id: str
    label: str
    description: str = ""
    # The option an expiry with `on_expiry = "default"` selects (at most one per question).
    default: bool = False


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    title: str
    prompt: str
    options: tuple[QuestionOption, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    question_id: str
    selected_options: tuple[str, ...] = ()
    custom_text: str = ""


@dataclass(frozen=True, slots=True)
class ClarificationResponse:
    """A normalized response to one bundle: answers in question order, or a rejection."""

    pending_id: str
    answers: tuple[Answer, ...]
    rejected: bool
    reject_reason: str = ""
    responded_at: datetime | None = None
    # Sent by the question's waiting policy at its expiry, not by a person.
    by_policy: bool = False
    # The person who answered, when the channel names them (a Slack user's mapped Clarion
    # user); None: a person the answer does not name.
    answered_by: str | None = None


@dataclass(frozen=True, slots=True)
class Bundle:
    """A bundle's durable rows with what decides its state, read in one transaction.

    `rows` are ordered by question_index, created_at, id. `current_turn_id` is the session's
    current turn (None when the session has no authoritative turn).
    """

    pending_id: str
    session: Session
    rows: tuple[Message, ...]
    current_turn_id: str | None
