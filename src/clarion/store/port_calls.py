"""One object per port of `clarion.ports.store`: the calls of that port and no other, each
bound, shielded (shielding.py), to the one part that implements it (`SqlLookups`,
`SqlAnswers`, ...). A call two ports declare (`find_deadlines`, `add_message`) is bound in
both to the same part's method, so it keeps one implementation.

Built by stores.py; the composition root hands each service the object of its port alone.
"""

from __future__ import annotations

from clarion.store.access import SqlAccess
from clarion.store.answers import SqlAnswers
from clarion.store.deadlines import SqlDeadlines
from clarion.store.deliveries import SqlDeliveries
from clarion.store.lookups import SqlLookups
from clarion.store.permissions import SqlPermissions
from clarion.store.reads import SqlReads
from clarion.store.recovery import SqlRecovery
from clarion.store.review_turns import SqlReviews
from clarion.store.shielding import InFlight
from clarion.store.turns import SqlTurns
from clarion.store.worktrees import SqlWorktrees


class LookupCalls:
    """`Lookups`: the reads every narrow port but the outbox's and the deadlines' includes."""

    def __init__(self, lookups: SqlLookups, calls: InFlight) -> None:
        shield = calls.shield
        self.get_task = shield(lookups.get_task)
        self.get_session = shield(lookups.get_session)
        self.list_sessions = shield(lookups.list_sessions)
        self.find_bundle = shield(lookups.find_bundle)
        self.sessions_with_active_clarification = shield(lookups.sessions_with_active_clarification)


class AnswerCalls(LookupCalls):
    """`AnswerStore`: the answer path."""

    def __init__(self, lookups: SqlLookups, answers: SqlAnswers, calls: InFlight) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
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


class TurnCalls(LookupCalls):
    """`TurnStore`: tasks, sessions, turns, messages and admission."""

    def __init__(self, lookups: SqlLookups, turns: SqlTurns, calls: InFlight) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
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


class RecoveryCalls(LookupCalls):
    """`RecoveryStore`: startup recovery, and a replica's recovery of adopted sessions."""

    def __init__(self, lookups: SqlLookups, recovery: SqlRecovery, calls: InFlight) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
        self.reconcile_reservations = shield(recovery.reconcile_reservations)
        self.reconcile_intents = shield(recovery.reconcile_intents)
        self.expire_stale_permissions = shield(recovery.expire_stale_permissions)
        self.list_start_marked_turns = shield(recovery.list_start_marked_turns)
        self.clear_start_markers = shield(recovery.clear_start_markers)
        self.transition_all_bundles = shield(recovery.transition_all_bundles)
        self.complete_open_turns = shield(recovery.complete_open_turns)
        self.list_sessions_in_states = shield(recovery.list_sessions_in_states)
        self.transition_sessions = shield(recovery.transition_sessions)


class ReadCalls(LookupCalls):
    """`ReadStore`: reads and projections."""

    def __init__(
        self, lookups: SqlLookups, reads: SqlReads, deadlines: SqlDeadlines, calls: InFlight
    ) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
        self.get_workspace = shield(reads.get_workspace)
        self.find_deadlines = shield(deadlines.find_deadlines)
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


class AccessCalls(LookupCalls):
    """`AccessStore`: API tokens and who may see what."""

    def __init__(self, lookups: SqlLookups, access: SqlAccess, calls: InFlight) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
        self.issue_api_token = shield(access.issue_api_token)
        self.find_token_owner = shield(access.find_token_owner)
        self.escalated_users = shield(access.escalated_users)


class PermissionCalls(LookupCalls):
    """`PermissionStore`: permission requests and agent failures."""

    def __init__(
        self, lookups: SqlLookups, permissions: SqlPermissions, turns: SqlTurns, calls: InFlight
    ) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
        self.add_permission_request = shield(permissions.add_permission_request)
        self.decide_permission = shield(permissions.decide_permission)
        self.settle_permissions = shield(permissions.settle_permissions)
        self.record_agent_failure = shield(permissions.record_agent_failure)
        self.add_message = shield(turns.add_message)
        self.get_message = shield(turns.get_message)


class OutboxCalls:
    """`OutboxStore`: the deliverer's queue (every channel's deliveries)."""

    def __init__(self, deliveries: SqlDeliveries, calls: InFlight) -> None:
        shield = calls.shield
        self.due_deliveries = shield(deliveries.due_deliveries)
        self.next_delivery_at = shield(deliveries.next_delivery_at)
        self.claim_delivery = shield(deliveries.claim_delivery)
        self.record_delivery_attempt = shield(deliveries.record_delivery_attempt)


class DeadlineCalls:
    """`DeadlineStore`: the waiting policy's timers."""

    def __init__(self, deadlines: SqlDeadlines, calls: InFlight) -> None:
        shield = calls.shield
        self.next_deadline_due = shield(deadlines.next_deadline_due)
        self.due_deadlines = shield(deadlines.due_deadlines)
        self.find_deadlines = shield(deadlines.find_deadlines)
        self.record_reminder = shield(deadlines.record_reminder)
        self.record_escalation = shield(deadlines.record_escalation)
        self.retire_deadlines = shield(deadlines.retire_deadlines)
        self.postpone_deadlines = shield(deadlines.postpone_deadlines)
        self.reopen_expiry = shield(deadlines.reopen_expiry)


class WorktreeCalls(LookupCalls):
    """`WorktreeStore`: a task's worktree row."""

    def __init__(self, lookups: SqlLookups, worktrees: SqlWorktrees, calls: InFlight) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
        self.claim_worktree = shield(worktrees.claim_worktree)
        self.set_worktree_state = shield(worktrees.set_worktree_state)
        self.worktree_tasks = shield(worktrees.worktree_tasks)


class ArchiveCalls(LookupCalls):
    """`ArchiveStore`: archive's guard and the task's move to archived."""

    def __init__(
        self, lookups: SqlLookups, worktrees: SqlWorktrees, turns: SqlTurns, calls: InFlight
    ) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
        self.claim_archive = shield(worktrees.claim_archive)
        self.set_task_step = shield(turns.set_task_step)


class ReviewCalls(LookupCalls):
    """`ReviewStore`: a review's reserved turn and the prompt it leaves in the transcript."""

    def __init__(
        self, lookups: SqlLookups, reviews: SqlReviews, turns: SqlTurns, calls: InFlight
    ) -> None:
        super().__init__(lookups, calls)
        shield = calls.shield
        self.reserve_review = shield(reviews.reserve_review)
        self.add_message = shield(turns.add_message)
