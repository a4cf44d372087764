"""What the store hands out: `Stores`, one object per port, each with its port's calls alone,
over one set of parts (`Parts`: one plain class per area, each over the shared `Db` and clock)
and one `InFlight` that finishes every call despite a cancelled caller.

The composition root gives each service the field of its port and nothing else; the fields are
typed as the ports, so a test's wrapper may put its own object in one (tests/failpoints).
Built by `SqlStore` (sql_store.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from clarion.ports import Clock
from clarion.ports.metrics import FiguresStore
from clarion.ports.ownership import Ownership
from clarion.ports.slack import SlackStore
from clarion.ports.store import (
    AccessStore,
    AnswerStore,
    ArchiveStore,
    DeadlineStore,
    Lookups,
    OutboxStore,
    PermissionStore,
    ReadStore,
    RecoveryStore,
    ReviewStore,
    TurnStore,
    WorktreeStore,
)
from clarion.store.access import SqlAccess
from clarion.store.answers import SqlAnswers
from clarion.store.db.engine import Db
from clarion.store.deadlines import SqlDeadlines
from clarion.store.deliveries import SqlDeliveries
from clarion.store.figures import SqlFigures
from clarion.store.link_secret import AnswerLinkSecret
from clarion.store.lookups import SqlLookups
from clarion.store.outbox import OutboxWriter
from clarion.store.ownership import SqlOwnership
from clarion.store.permissions import SqlPermissions
from clarion.store.port_calls import (
    AccessCalls,
    AnswerCalls,
    ArchiveCalls,
    DeadlineCalls,
    LookupCalls,
    OutboxCalls,
    PermissionCalls,
    ReadCalls,
    RecoveryCalls,
    ReviewCalls,
    TurnCalls,
    WorktreeCalls,
)
from clarion.store.probes import RowProbes
from clarion.store.reads import SqlReads
from clarion.store.recovery import SqlRecovery
from clarion.store.retention import Prunable, SqlRetention
from clarion.store.review_turns import SqlReviews
from clarion.store.server_calls import (
    FigureCalls,
    LinkSecretCalls,
    OwnershipCalls,
    ProbeCalls,
    RetentionCalls,
)
from clarion.store.shielding import InFlight
from clarion.store.slack import SqlSlack
from clarion.store.turns import SqlTurns
from clarion.store.worktrees import SqlWorktrees


@dataclass(frozen=True, slots=True)
class Parts:
    """One implementation per call: the four whose writes cause events get the
    `OutboxWriter`. No part inherits from another and none reads state it was not given."""

    lookups: SqlLookups
    answers: SqlAnswers
    turns: SqlTurns
    recovery: SqlRecovery
    reads: SqlReads
    access: SqlAccess
    permissions: SqlPermissions
    deliveries: SqlDeliveries
    deadlines: SqlDeadlines
    worktrees: SqlWorktrees
    reviews: SqlReviews
    ownership: SqlOwnership
    figures: SqlFigures
    retention: SqlRetention
    link_secret: AnswerLinkSecret
    probes: RowProbes

    @classmethod
    def over(cls, db: Db, clock: Clock, outbox: OutboxWriter) -> Parts:
        return cls(
            lookups=SqlLookups(db, clock),
            answers=SqlAnswers(db, clock, outbox),
            turns=SqlTurns(db, clock),
            recovery=SqlRecovery(db, clock, outbox),
            reads=SqlReads(db, clock),
            access=SqlAccess(db, clock),
            permissions=SqlPermissions(db, clock, outbox),
            deliveries=SqlDeliveries(db, clock),
            deadlines=SqlDeadlines(db, clock, outbox),
            worktrees=SqlWorktrees(db, clock),
            reviews=SqlReviews(db, clock),
            ownership=SqlOwnership(db),
            figures=SqlFigures(db, clock),
            retention=SqlRetention(db),
            link_secret=AnswerLinkSecret(db),
            probes=RowProbes(db, clock),
        )

    def all(self) -> tuple[object, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True, slots=True)
class Stores:
    """One object per port. `slack` is the Slack channel's records, which run unshielded as
    they always did; `probes` is for the store's contract tests only."""

    lookups: Lookups
    answers: AnswerStore
    turns: TurnStore
    recovery: RecoveryStore
    reads: ReadStore
    access: AccessStore
    permissions: PermissionStore
    outbox: OutboxStore
    deadlines: DeadlineStore
    worktrees: WorktreeStore
    archive: ArchiveStore
    reviews: ReviewStore
    ownership: Ownership
    figures: FiguresStore
    retention: Prunable
    link_secret: LinkSecretCalls
    slack: SlackStore
    probes: ProbeCalls

    @classmethod
    def over(cls, parts: Parts, db: Db, clock: Clock, calls: InFlight) -> Stores:
        p = parts
        return cls(
            lookups=LookupCalls(p.lookups, calls),
            answers=AnswerCalls(p.lookups, p.answers, calls),
            turns=TurnCalls(p.lookups, p.turns, calls),
            recovery=RecoveryCalls(p.lookups, p.recovery, calls),
            reads=ReadCalls(p.lookups, p.reads, p.deadlines, calls),
            access=AccessCalls(p.lookups, p.access, calls),
            permissions=PermissionCalls(p.lookups, p.permissions, p.turns, calls),
            outbox=OutboxCalls(p.deliveries, calls),
            deadlines=DeadlineCalls(p.deadlines, calls),
            worktrees=WorktreeCalls(p.lookups, p.worktrees, calls),
            archive=ArchiveCalls(p.lookups, p.worktrees, p.turns, calls),
            reviews=ReviewCalls(p.lookups, p.reviews, p.turns, calls),
            ownership=OwnershipCalls(p.ownership, p.worktrees, calls),
            figures=FigureCalls(p.figures, calls),
            retention=RetentionCalls(p.retention, calls),
            link_secret=LinkSecretCalls(p.link_secret, calls),
            slack=SqlSlack(db, clock),
            probes=ProbeCalls(p.probes, p.deliveries, db.engine, calls),
        )

    def all(self) -> dict[str, object]:
        """Each port's name and object (what the architecture test and test wrappers walk)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
