"""The store's objects for the composition root's own halves, each with its calls alone,
shielded (shielding.py): the cluster's ownership (`clarion.ports.ownership`), the metrics
gauges' read, the retention prune, the answer links' secret; and the contract tests' row
probes, which no port declares.

Built by stores.py.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from clarion.store.deliveries import SqlDeliveries
from clarion.store.figures import SqlFigures
from clarion.store.link_secret import AnswerLinkSecret
from clarion.store.ownership import SqlOwnership
from clarion.store.probes import RowProbes
from clarion.store.retention import SqlRetention
from clarion.store.shielding import InFlight
from clarion.store.worktrees import SqlWorktrees


class OwnershipCalls:
    """`clarion.ports.ownership.Ownership`: the cluster code's reads, adoptions and fence."""

    def __init__(self, ownership: SqlOwnership, worktrees: SqlWorktrees, calls: InFlight) -> None:
        shield = calls.shield
        # Setting the fence is no transaction: nothing to finish despite a cancelled caller.
        self.own_sessions = ownership.own_sessions
        self.adopt_replica = shield(ownership.adopt_replica)
        self.adopt_orphans = shield(ownership.adopt_orphans)
        self.dead_peers = shield(ownership.dead_peers)
        self.is_running = shield(ownership.is_running)
        self.placement = shield(ownership.placement)
        self.route_of_session = shield(ownership.route_of_session)
        self.route_of_bundle = shield(ownership.route_of_bundle)
        self.route_of_message = shield(ownership.route_of_message)
        self.route_of_task = shield(worktrees.route_of_task)
        self.bundle_owners = shield(ownership.bundle_owners)


class FigureCalls:
    """`clarion.ports.metrics.FiguresStore`: the gauges' one read."""

    def __init__(self, figures: SqlFigures, calls: InFlight) -> None:
        self.operational_figures = calls.shield(figures.operational_figures)


class RetentionCalls:
    """`clarion.store.retention.Prunable`: what the prune (the job and `clarion db prune`)
    reads and deletes."""

    def __init__(self, retention: SqlRetention, calls: InFlight) -> None:
        shield = calls.shield
        self.prunable_sessions = shield(retention.prunable_sessions)
        self.count_pruned = shield(retention.count_pruned)
        self.prune_sessions = shield(retention.prune_sessions)
        self.prune_deliveries = shield(retention.prune_deliveries)


class LinkSecretCalls:
    """The answer links' signing key, made once per database."""

    def __init__(self, link_secret: AnswerLinkSecret, calls: InFlight) -> None:
        self.answer_link_secret = calls.shield(link_secret.answer_link_secret)


class ProbeCalls:
    """Rows the store's contract tests look at directly, and the engine their raw writes go
    through; no service is handed this."""

    def __init__(
        self, probes: RowProbes, deliveries: SqlDeliveries, engine: AsyncEngine, calls: InFlight
    ) -> None:
        self.engine = engine
        shield = calls.shield
        self.list_open_turns = shield(probes.list_open_turns)
        self.find_live_reservation = shield(probes.find_live_reservation)
        self.clear_start_marker = shield(probes.clear_start_marker)
        self.list_detachable_bundles = shield(probes.list_detachable_bundles)
        self.list_deliveries = shield(deliveries.list_deliveries)
