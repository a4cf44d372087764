"""The one schema, shared by SQLite and PostgreSQL. Table and column names follow kandev.

Imported only inside `clarion.store`. `metadata` columns hold JSON objects as TEXT.

`task_session_messages.pending_id` is a real, indexed column that mirrors `metadata.pending_id`.
It is written once when the row is inserted (a bundle's identity never changes), and it makes
"find the bundle" an index lookup on both databases without dialect-specific expression
indexes. Every clarification scan also filters `pending_id IS NOT NULL`, so it walks that
index instead of the whole transcript.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

from clarion.store.db.portable_sql import JsonText, UtcDateTime

ID = String(36)
schema = MetaData()

workspaces = Table(
    "workspaces",
    schema,
    Column("id", ID, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
)

tasks = Table(
    "tasks",
    schema,
    Column("id", ID, primary_key=True),
    Column("title", Text, nullable=False),
    Column("description", Text, nullable=False, default=""),
    Column("workspace_id", ID, ForeignKey("workspaces.id"), nullable=False),
    Column("workflow_step", String(32), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # Task worktrees (store/worktrees.py); added by migration 11 to older databases.
    Column("repository", String(200), nullable=True),
    Column("worktree_path", Text, nullable=True),
    Column("worktree_branch", Text, nullable=True),
    Column("worktree_base", Text, nullable=True),
    Column("worktree_state", String(16), nullable=True),
    Index("ix_tasks_workspace_created", "workspace_id", "created_at", "id"),
    Index("ix_tasks_created", "created_at", "id"),
)

task_sessions = Table(
    "task_sessions",
    schema,
    Column("id", ID, primary_key=True),
    Column("task_id", ID, ForeignKey("tasks.id"), nullable=False),
    Column("agent", String(200), nullable=False),
    Column("state", String(32), nullable=False),
    Column("is_primary", Boolean, nullable=False, default=False),
    Column("metadata", JsonText, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # Cluster mode: the replica that runs the session's agent (null: a single-mode server's).
    Column("owner_replica_id", String(64), nullable=True),
    Index("ix_task_sessions_task", "task_id", "created_at", "id"),
    Index("ix_task_sessions_state", "state"),
    Index("ix_task_sessions_owner", "owner_replica_id"),
)

task_session_turns = Table(
    "task_session_turns",
    schema,
    Column("id", ID, primary_key=True),
    Column("task_session_id", ID, ForeignKey("task_sessions.id"), nullable=False),
    Column("task_id", ID, ForeignKey("tasks.id"), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("completed_at", UtcDateTime, nullable=True),
    Column("metadata", JsonText, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index("ix_turns_session_order", "task_session_id", "started_at", "created_at", "id"),
    Index("ix_turns_open", "completed_at"),
)

task_session_messages = Table(
    "task_session_messages",
    schema,
    Column("id", ID, primary_key=True),
    Column("task_session_id", ID, ForeignKey("task_sessions.id"), nullable=False),
    Column("task_id", ID, ForeignKey("tasks.id"), nullable=False),
    Column("turn_id", ID, ForeignKey("task_session_turns.id"), nullable=True),
    Column("author_type", String(16), nullable=False),
    Column("author_id", String(200), nullable=True),
    Column("content", Text, nullable=False),
    Column("requests_input", Boolean, nullable=False, default=False),
    Column("type", String(40), nullable=False),
    Column("pending_id", String(200), nullable=True),
    Column("metadata", JsonText, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index("ix_messages_session_order", "task_session_id", "created_at", "id"),
    Index("ix_messages_turn", "turn_id"),
    Index("ix_messages_pending", "pending_id"),
)

task_status_summaries = Table(
    "task_status_summaries",
    schema,
    Column("task_id", ID, ForeignKey("tasks.id"), primary_key=True),
    Column("workspace_id", ID, nullable=False),
    Column("revision", Integer, nullable=False),
    Column("summary", JsonText, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

kandev_meta = Table(
    "kandev_meta",
    schema,
    Column("key", String(200), primary_key=True),
    Column("value", Text, nullable=False),
)

# Access control (migration 2). A separate MetaData so that migration 1, which creates
# everything in `schema`, keeps creating exactly the tables it always did.
auth_schema = MetaData()

users = Table(
    "users",
    auth_schema,
    Column("id", ID, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
)

workspace_members = Table(
    "workspace_members",
    auth_schema,
    Column("workspace_id", ID, ForeignKey(workspaces.c.id), primary_key=True),
    Column("user_id", ID, ForeignKey(users.c.id), primary_key=True),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_workspace_members_user", "user_id", "created_at"),
)

# Only the SHA-256 of a token is stored: a database dump never yields a usable credential.
api_tokens = Table(
    "api_tokens",
    auth_schema,
    Column("id", ID, primary_key=True),
    Column("user_id", ID, ForeignKey(users.c.id), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
)

# Outgoing webhooks (migration 5): the durable outbox, named when webhooks were its only channel;
# it holds every channel's deliveries (webhook, email, Slack; `url` a webhook's URL or a
# channel's key). A row is written in the transaction that caused its event and stays until it
# was delivered or given up; `body` is the exact text sent, so every retry sends (and signs) the
# same bytes under the same delivery id.
webhook_schema = MetaData()

webhook_deliveries = Table(
    "webhook_deliveries",
    webhook_schema,
    Column("id", ID, primary_key=True),
    Column("url", Text, nullable=False),
    Column("event", String(64), nullable=False),
    Column("body", Text, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UtcDateTime, nullable=False),
    Column("delivered_at", UtcDateTime, nullable=True),
    Column("gave_up_at", UtcDateTime, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_webhook_deliveries_due", "delivered_at", "gave_up_at", "next_attempt_at"),
)

# Cluster replicas (migration 6): one row per `clarion serve --cluster` process. Liveness itself
# is the replica's advisory locks (store/db/membership.py); the row is what others can see of it,
# `last_seen_at` (the database's clock) is what a survivor waits out before it adopts the
# replica's sessions, and the adopter deletes the row (store/ownership.py).
cluster_schema = MetaData()

replicas = Table(
    "clarion_replicas",
    cluster_schema,
    Column("id", ID, primary_key=True),
    Column("advertise_url", Text, nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("role", String(16), nullable=False),
    Column("sessions", Integer, nullable=False),
    Column("heartbeats", Integer, nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("last_seen_at", UtcDateTime, nullable=False),
)

# Waiting policy (migration 9): one row per question asked under a policy that can fire (see
# domain/waiting.py), written in the transaction that writes the question. `next_due_at` is the
# earliest timer still to fire (null once none is left), which the scheduler waits for; each
# timer's own column records that it fired, and is set only by a guarded update.
waiting_schema = MetaData()

clarification_deadlines = Table(
    "clarification_deadlines",
    waiting_schema,
    Column("pending_id", ID, primary_key=True),
    Column("session_id", ID, nullable=False),
    Column("task_id", ID, nullable=False),
    Column("waiting_since", UtcDateTime, nullable=False),
    Column("remind_every_s", Integer, nullable=True),
    Column("remind_after", String(32), nullable=True),
    Column("remind_at", UtcDateTime, nullable=True),
    Column("reminders", Integer, nullable=False, default=0),
    Column("escalate_at", UtcDateTime, nullable=True),
    Column("escalate_to", JsonText, nullable=False),
    Column("escalated_at", UtcDateTime, nullable=True),
    Column("expire_at", UtcDateTime, nullable=True),
    Column("expire_after", String(32), nullable=True),
    Column("on_expiry", String(16), nullable=False),
    Column("expired_at", UtcDateTime, nullable=True),
    Column("next_due_at", UtcDateTime, nullable=True),
    Index("ix_clarification_deadlines_due", "next_due_at"),
)

# Slack (migration 12): the message each question was posted as (so replies thread under it
# and the outcome replaces its buttons; `closed_at` once that update went through), and the
# durable queue of clicks and modal submissions, each written before Slack is acknowledged
# and answered from here (`done_at` once its outcome is recorded). An interaction's id is its
# dedupe key, so Slack's retries of one request insert one row.
slack_schema = MetaData()

slack_messages = Table(
    "slack_messages",
    slack_schema,
    Column("pending_id", String(200), primary_key=True),
    Column("channel_key", String(250), nullable=False),
    Column("channel", String(64), nullable=False),
    Column("ts", String(32), nullable=False),
    Column("task_id", ID, nullable=False),
    Column("session_id", ID, nullable=False),
    Column("posted_at", UtcDateTime, nullable=False),
    # What the message was built from (domain/slack.py), to rebuild it without buttons.
    Column("body", Text, nullable=False),
    Column("closed_at", UtcDateTime, nullable=True),
    Column("outcome", Text, nullable=True),
    # Migration 13: the closing `chat.update` is claimed until then (a guarded update), so of
    # the replicas and workers that see the question settle, one sends it; a claimer that
    # died leaves it to be taken again once this has passed.
    Column("close_lease_until", UtcDateTime, nullable=True),
    Index("ix_slack_messages_open", "closed_at"),
)

slack_interactions = Table(
    "slack_interactions",
    slack_schema,
    Column("id", String(64), primary_key=True),
    Column("pending_id", String(200), nullable=False),
    Column("slack_user", String(64), nullable=False),
    Column("user_name", String(200), nullable=True),
    Column("channel", String(64), nullable=True),
    Column("message_ts", String(32), nullable=True),
    Column("body", Text, nullable=False),
    Column("received_at", UtcDateTime, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UtcDateTime, nullable=False),
    Column("done_at", UtcDateTime, nullable=True),
    Column("outcome", String(32), nullable=True),
    Column("detail", Text, nullable=True),
    Index("ix_slack_interactions_due", "done_at", "next_attempt_at"),
    Index("ix_slack_interactions_pending", "pending_id"),
)
