"""SqlStore: the Store port on SQLAlchemy Core, for SQLite and PostgreSQL alike, composed of
one implementation per port.

Imported by the composition root (through `clarion.store`) and the store tests. Each port of
`clarion.ports.store` has its own plain class over the shared `Db` and clock (`SqlAnswers`,
`SqlTurns`, ...), handed explicitly what else it needs (the `OutboxWriter` its writes queue
notifications with); no class inherits from another. SqlStore builds them, owns the engine's
lifetime, and exposes every public coroutine of every part as its own attribute, wrapped so a
cancelled caller cannot interrupt the transaction: the services keep being given this one
object typed as their narrow protocol, and mypy checks it against each.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from clarion.ports import Clock
from clarion.store.access import SqlAccess
from clarion.store.answers import SqlAnswers
from clarion.store.db.engine import Db, open_engine
from clarion.store.db.migrations import migrate
from clarion.store.db.owner_fence import OwnerFence
from clarion.store.db.schema_status import require_current
from clarion.store.deadlines import SqlDeadlines
from clarion.store.figures import SqlFigures
from clarion.store.link_secret import AnswerLinkSecret
from clarion.store.lookups import SqlLookups
from clarion.store.outbox import Outbox, OutboxWriter
from clarion.store.ownership import SqlOwnership
from clarion.store.permissions import SqlPermissions
from clarion.store.probes import RowProbes
from clarion.store.reads import SqlReads
from clarion.store.recovery import SqlRecovery
from clarion.store.retention import SqlRetention
from clarion.store.review_turns import SqlReviews
from clarion.store.slack import SqlSlack
from clarion.store.turns import SqlTurns
from clarion.store.webhooks import SqlWebhooks
from clarion.store.worktrees import SqlWorktrees

P = ParamSpec("P")
T = TypeVar("T")


class SqlStore:
    """Every method is one transaction. Writes that touch a session's turns or clarification
    rows hold that session's write lock for the whole transaction.

    Implements `clarion.ports.Store`, the union of the consumers' narrow protocols, and the
    cluster, metrics and retention reads. A method two ports share (`find_deadlines`) has one
    implementation. `RowProbes` (`list_open_turns`, `find_live_reservation`, `clear_start_marker`,
    `list_detachable_bundles`) belong to no port: the store's contract tests look at rows
    directly with them; no service may call them (mypy checks services against the ports)."""

    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = db = Db(engine)
        self._clock = clock
        self._inflight: set[asyncio.Future[Any]] = set()
        self._outbox = outbox = OutboxWriter()
        shield = self._finish_despite_cancellation
        lookups = SqlLookups(db, clock)
        self.get_task = shield(lookups.get_task)
        self.get_session = shield(lookups.get_session)
        self.list_sessions = shield(lookups.list_sessions)
        self.find_bundle = shield(lookups.find_bundle)
        self.sessions_with_active_clarification = shield(lookups.sessions_with_active_clarification)
        answers = SqlAnswers(db, clock, outbox)
        self.session_with_current_turn = shield(answers.session_with_current_turn)
        self.create_bundle = shield(answers.create_bundle)
        self.claim_response = shield(answers.claim_response)
        self.confirm_delivery = shield(answers.confirm_delivery)
        self.transition_bundle = shield(answers.transition_bundle)
        self.transition_session_bundles = shield(answers.transition_session_bundles)
        self.reserve_successor = shield(answers.reserve_successor)
        self.mark_attempted = shield(answers.mark_attempted)
        self.publish_successor = shield(answers.publish_successor)
        self.rollback_successor = shield(answers.rollback_successor)
        turns = SqlTurns(db, clock)
        self.ensure_workspace = shield(turns.ensure_workspace)
        self.create_task = shield(turns.create_task)
        self.set_task_step = shield(turns.set_task_step)
        self.create_session = shield(turns.create_session)
        self.transition_session = shield(turns.transition_session)
        self.create_turn = shield(turns.create_turn)
        self.complete_turn = shield(turns.complete_turn)
        self.get_turn = shield(turns.get_turn)
        self.find_current_turn = shield(turns.find_current_turn)
        self.add_message = shield(turns.add_message)
        self.append_message_content = shield(turns.append_message_content)
        self.get_message = shield(turns.get_message)
        self.delete_message = shield(turns.delete_message)
        self.list_active_bundle_ids = shield(turns.list_active_bundle_ids)
        self.recent_messages = shield(turns.recent_messages)
        self.remember_acp_session = shield(turns.remember_acp_session)
        self.mark_agent_stopped = shield(turns.mark_agent_stopped)
        self.clear_agent_stopped = shield(turns.clear_agent_stopped)
        recovery = SqlRecovery(db, clock, outbox)
        self.reconcile_reservations = shield(recovery.reconcile_reservations)
        self.reconcile_intents = shield(recovery.reconcile_intents)
        self.expire_stale_permissions = shield(recovery.expire_stale_permissions)
        self.list_start_marked_turns = shield(recovery.list_start_marked_turns)
        self.clear_start_markers = shield(recovery.clear_start_markers)
        self.transition_all_bundles = shield(recovery.transition_all_bundles)
        self.complete_open_turns = shield(recovery.complete_open_turns)
        self.list_sessions_in_states = shield(recovery.list_sessions_in_states)
        self.transition_sessions = shield(recovery.transition_sessions)
        reads = SqlReads(db, clock)
        self.get_workspace = shield(reads.get_workspace)
        self.list_tasks = shield(reads.list_tasks)
        self.list_visible_turns = shield(reads.list_visible_turns)
        self.list_messages = shield(reads.list_messages)
        self.pending_actions = shield(reads.pending_actions)
        self.inbox_entries = shield(reads.inbox_entries)
        self.find_summary = shield(reads.find_summary)
        self.summary_inputs = shield(reads.summary_inputs)
        self.cas_summary = shield(reads.cas_summary)
        self.next_epoch = shield(reads.next_epoch)
        self.reserve_revision = shield(reads.reserve_revision)
        access = SqlAccess(db, clock)
        self.issue_api_token = shield(access.issue_api_token)
        self.find_token_owner = shield(access.find_token_owner)
        self.escalated_users = shield(access.escalated_users)
        permissions = SqlPermissions(db, clock, outbox)
        self.add_permission_request = shield(permissions.add_permission_request)
        self.decide_permission = shield(permissions.decide_permission)
        self.settle_permissions = shield(permissions.settle_permissions)
        self.record_agent_failure = shield(permissions.record_agent_failure)
        webhooks = SqlWebhooks(db, clock)
        self.due_webhook_deliveries = shield(webhooks.due_webhook_deliveries)
        self.next_webhook_attempt_at = shield(webhooks.next_webhook_attempt_at)
        self.claim_webhook_delivery = shield(webhooks.claim_webhook_delivery)
        self.record_webhook_attempt = shield(webhooks.record_webhook_attempt)
        self.list_webhook_deliveries = shield(webhooks.list_webhook_deliveries)
        deadlines = SqlDeadlines(db, clock, outbox)
        self.next_deadline_due = shield(deadlines.next_deadline_due)
        self.due_deadlines = shield(deadlines.due_deadlines)
        self.find_deadlines = shield(deadlines.find_deadlines)
        self.record_reminder = shield(deadlines.record_reminder)
        self.record_escalation = shield(deadlines.record_escalation)
        self.retire_deadlines = shield(deadlines.retire_deadlines)
        self.postpone_deadlines = shield(deadlines.postpone_deadlines)
        self.reopen_expiry = shield(deadlines.reopen_expiry)
        ownership = SqlOwnership(db)
        self.adopt_replica = shield(ownership.adopt_replica)
        self.adopt_orphans = shield(ownership.adopt_orphans)
        self.dead_peers = shield(ownership.dead_peers)
        self.is_running = shield(ownership.is_running)
        self.placement = shield(ownership.placement)
        self.route_of_session = shield(ownership.route_of_session)
        self.route_of_bundle = shield(ownership.route_of_bundle)
        self.route_of_message = shield(ownership.route_of_message)
        self.bundle_owners = shield(ownership.bundle_owners)
        reviews = SqlReviews(db, clock)
        self.reserve_review = shield(reviews.reserve_review)
        worktrees = SqlWorktrees(db, clock)
        self.claim_worktree = shield(worktrees.claim_worktree)
        self.claim_archive = shield(worktrees.claim_archive)
        self.set_worktree_state = shield(worktrees.set_worktree_state)
        self.worktree_tasks = shield(worktrees.worktree_tasks)
        self.route_of_task = shield(worktrees.route_of_task)
        figures = SqlFigures(db, clock)
        self.operational_figures = shield(figures.operational_figures)
        retention = SqlRetention(db)
        self.prunable_sessions = shield(retention.prunable_sessions)
        self.count_pruned = shield(retention.count_pruned)
        self.prune_sessions = shield(retention.prune_sessions)
        self.prune_webhook_deliveries = shield(retention.prune_webhook_deliveries)
        link_secret = AnswerLinkSecret(db)
        self.answer_link_secret = shield(link_secret.answer_link_secret)
        probes = RowProbes(db, clock)
        self.list_open_turns = shield(probes.list_open_turns)
        self.find_live_reservation = shield(probes.find_live_reservation)
        self.clear_start_marker = shield(probes.clear_start_marker)
        self.list_detachable_bundles = shield(probes.list_detachable_bundles)
        self._parts = (
            lookups,
            answers,
            turns,
            recovery,
            reads,
            access,
            permissions,
            webhooks,
            deadlines,
            ownership,
            figures,
            retention,
            worktrees,
            reviews,
            link_secret,
            probes,
        )

    def _finish_despite_cancellation(
        self, method: Callable[P, Coroutine[Any, Any, T]]
    ) -> Callable[P, Coroutine[Any, Any, T]]:
        """Run the transaction in its own task so that a cancelled caller cannot interrupt it
        halfway: an interrupted SQLite transaction could keep the write lock, and a half-done
        guarded update would leave the caller unsure what applied. The caller still sees its
        cancellation at once."""

        @functools.wraps(method)
        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            task = asyncio.ensure_future(method(*args, **kwargs))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
            task.add_done_callback(self._outbox.after_call)
            return await asyncio.shield(task)

        run.finishes_despite_cancellation = True  # type: ignore[attr-defined]
        return run

    def slack_records(self) -> SqlSlack:
        """The Slack channel's records (store/slack.py), on this store's database."""
        return SqlSlack(self._db, self._clock)

    def configure_webhooks(self, outbox: Outbox) -> None:
        """Which events to queue for which webhook (set once, by the composition root)."""
        self._outbox.configure(outbox)

    def own_sessions(self, fence: OwnerFence) -> None:
        """From now on sessions this store creates are `fence.replica_id`'s, and every
        session write checks that the session still is (store/db/owner_fence.py)."""
        self._db.fence = fence

    async def _drain(self, within: float = 10.0) -> None:
        """Wait for transactions whose callers were cancelled, before the engine closes."""
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=within)

    def close(self) -> None:
        """Close the store's own connections; the engine stays its opener's to dispose."""
        self._db.close()

    @property
    def engine(self) -> AsyncEngine:
        return self._db.engine

    @property
    def dialect(self) -> str:
        return self._db.engine.dialect.name


@asynccontextmanager
async def open_store(
    url: str, clock: Clock, *, migrate_schema: bool = True
) -> AsyncIterator[SqlStore]:
    """Open the database at `url`, migrate it to the latest schema, and dispose on exit.
    Without `migrate_schema`, SchemaBehind if it needs migrations."""
    engine = open_engine(url)
    try:
        if migrate_schema:
            await migrate(engine)
        else:
            await require_current(engine)
        store = SqlStore(engine, clock)
        try:
            yield store
        finally:
            await store._drain()
            store._db.close()
    finally:
        await engine.dispose()
