"""The seams between services and I/O. Services import these Protocols, never an implementation.

Each method's docstring is its contract; the contract suites under tests/ run every
implementation against it. Conventions: `get_x` raises NotFound, `find_x` returns None,
guarded transitions return whether (or which rows) they applied. A lost race is a False or an
empty tuple, never an exception.
"""

from clarion.ports.agents import (
    AcpSessionInfo,
    AgentExited,
    AgentLaunch,
    AgentOutput,
    AgentRuntime,
    AgentSink,
    PermissionAsk,
    ProfileResolver,
    PromptFinished,
)
from clarion.ports.bus import Bus, BusSubscription, Event
from clarion.ports.cluster import ClusterView, ReplicaInfo
from clarion.ports.store import (
    AccessStore,
    AnswerStore,
    ChangedBundle,
    ClaimResult,
    Clock,
    DeadlineRecord,
    DeadlineStore,
    InboxEntry,
    IntentRecovery,
    MessagePage,
    NewMessage,
    OutboxStore,
    PermissionStore,
    QueuedDelivery,
    ReadStore,
    RecoveryStore,
    ReservationRecovery,
    SummaryInputs,
    TokenOwner,
    TurnStore,
    Written,
)

__all__ = [
    "AccessStore",
    "AcpSessionInfo",
    "AgentExited",
    "AgentLaunch",
    "AgentOutput",
    "AgentRuntime",
    "AgentSink",
    "AnswerStore",
    "Bus",
    "BusSubscription",
    "ChangedBundle",
    "ClaimResult",
    "Clock",
    "ClusterView",
    "DeadlineRecord",
    "DeadlineStore",
    "Event",
    "InboxEntry",
    "IntentRecovery",
    "MessagePage",
    "NewMessage",
    "OutboxStore",
    "PermissionAsk",
    "PermissionStore",
    "ProfileResolver",
    "PromptFinished",
    "QueuedDelivery",
    "ReadStore",
    "RecoveryStore",
    "ReplicaInfo",
    "ReservationRecovery",
    "SummaryInputs",
    "TokenOwner",
    "TurnStore",
    "Written",
]
