"""Versioned schema migrations from an empty database. Imported by `clarion.store` only.

Each migration is a function of a synchronous connection, applied in order inside one write
transaction that first takes a migration lock (PostgreSQL advisory lock; SQLite's
`BEGIN IMMEDIATE`), so two processes starting at once apply each step exactly once and the
second sees the first one's result. Running it again on a current database changes nothing.
Both databases have transactional DDL, so a failed step leaves the previous version intact.

Adding a migration: append a function to MIGRATIONS; never edit one that has shipped.
Migration 1 builds the tables from `schema.py`; later migrations alter them explicitly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Column, Connection, Integer, MetaData, Table, insert, inspect, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from clarion.store.db.engine import Db
from clarion.store.db.portable_sql import UtcDateTime
from clarion.store.db.schema import (
    auth_schema,
    cluster_schema,
    schema,
    slack_schema,
    waiting_schema,
    webhook_schema,
)

log = logging.getLogger(__name__)

_version_meta = MetaData()
schema_version = Table(
    "clarion_schema_version",
    _version_meta,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", UtcDateTime, nullable=False),
)


def _v1_initial_tables(conn: Connection) -> None:
    schema.create_all(conn, checkfirst=True)


def _v2_access_control(conn: Connection) -> None:
    # users, workspace_members, api_tokens; they only reference existing tables.
    auth_schema.create_all(conn, checkfirst=True)


def _v3_current_turn_index(conn: Connection) -> None:
    # The current-turn lookup walks a session's open turns newest first and stops at the
    # first candidate (predicates.current_turn_id); without this index it visits every turn.
    conn.execute(
        text(
            "CREATE INDEX IF NOT EXISTS ix_turns_session_open ON task_session_turns "
            "(task_session_id, completed_at, started_at, created_at, id)"
        )
    )


def _v4_turn_type_order_index(conn: Connection) -> None:
    # "The newest row of this type in this turn" (the permission check of the pending rule)
    # must not be answered by walking the whole session's history backwards through
    # ix_messages_session_order, which is what SQLite chose without it once the session was
    # long (250 ms at 100,000 messages, on the event loop).
    conn.execute(
        text(
            "CREATE INDEX IF NOT EXISTS ix_messages_turn_type_order ON task_session_messages "
            "(turn_id, type, created_at, id)"
        )
    )


def _v5_webhook_outbox(conn: Connection) -> None:
    # webhook_deliveries; references nothing, so it can be created on any earlier version.
    webhook_schema.create_all(conn, checkfirst=True)


def _v6_cluster_replicas(conn: Connection) -> None:
    # clarion_replicas; references nothing. Created on SQLite too (unused there: cluster mode
    # needs PostgreSQL) so that both databases keep one schema version sequence.
    cluster_schema.create_all(conn, checkfirst=True)


def _v7_session_owner(conn: Connection) -> None:
    # task_sessions.owner_replica_id: which cluster replica runs the session's agent. A
    # database created by this version's v1 already has it.
    columns = {str(c["name"]) for c in inspect(conn).get_columns("task_sessions")}
    if "owner_replica_id" not in columns:
        conn.execute(text("ALTER TABLE task_sessions ADD COLUMN owner_replica_id VARCHAR(64)"))
    conn.execute(
        text(
            "CREATE INDEX IF NOT EXISTS ix_task_sessions_owner ON task_sessions (owner_replica_id)"
        )
    )


def _v8_pending_revision_sequence(conn: Connection) -> None:
    # Cluster mode: the sequence half of every replica's pending-projection revision
    # (store/revisions.py). CACHE 1 (PostgreSQL's default, spelled out): a session that
    # cached values would hand out numbers out of real-time order with the other sessions,
    # and the ordering argument rests on that order. Nothing on SQLite, which has no
    # sequences and no cluster mode; the version still counts there, keeping one sequence
    # of schema versions for both databases.
    if conn.dialect.name == "postgresql":
        conn.execute(
            text("CREATE SEQUENCE IF NOT EXISTS clarion_pending_revision AS BIGINT CACHE 1")
        )


def _v9_clarification_deadlines(conn: Connection) -> None:
    # clarification_deadlines: a question's waiting-policy timers (store/deadlines.py). It
    # references nothing, so it can be created on any earlier version.
    waiting_schema.create_all(conn, checkfirst=True)


# The pending rows of a turn (status missing, '' or 'pending'; `predicates.status_pending`),
# found without reading the turn's answered ones: the task summary asks "does the current turn
# hold a pending question" on every change, and a turn of a few hundred answered questions
# made that a scan (SQLite 0.33 ms at 300 rows, PostgreSQL 1.9 ms). Each database gets the form
# its planner uses: SQLite an index on the status expression (it matches the query's expression
# exactly, so the text here must stay the query's), PostgreSQL a partial index on the pending
# rows alone (its generic plans do not seek an expression compared with a list).
_TURN_PENDING = {
    "sqlite": (
        "CREATE INDEX IF NOT EXISTS ix_messages_turn_pending ON task_session_messages "
        "(turn_id, (COALESCE(CAST(json_extract(metadata, '$.status') AS TEXT), '')))"
    ),
    "postgresql": (
        "CREATE INDEX IF NOT EXISTS ix_messages_turn_pending ON task_session_messages "
        "(turn_id) WHERE COALESCE(CAST(metadata AS JSONB) ->> 'status', '') IN ('', 'pending')"
    ),
}


def _v10_turn_pending_index(conn: Connection) -> None:
    conn.execute(text(_TURN_PENDING[conn.dialect.name]))


_TASK_WORKTREE_COLUMNS = (
    ("repository", "VARCHAR(200)"),
    ("worktree_path", "TEXT"),
    ("worktree_branch", "TEXT"),
    ("worktree_base", "TEXT"),
    ("worktree_state", "VARCHAR(16)"),
)


def _v11_task_worktrees(conn: Connection) -> None:
    # tasks.repository and the task's worktree (path, branch, base, state). A database
    # created by this version's v1 already has them.
    columns = {str(c["name"]) for c in inspect(conn).get_columns("tasks")}
    for name, kind in _TASK_WORKTREE_COLUMNS:
        if name not in columns:
            conn.execute(text(f"ALTER TABLE tasks ADD COLUMN {name} {kind}"))
    # Startup looks for the rows a kill left `creating` (and the `ready` ones to check) among
    # every task; the index keeps that a seek on a board of thousands of tasks.
    conn.execute(
        text("CREATE INDEX IF NOT EXISTS ix_tasks_worktree_state ON tasks (worktree_state)")
    )


def _v12_slack(conn: Connection) -> None:
    # slack_messages and slack_interactions; they reference nothing, so they can be created
    # on any earlier version.
    slack_schema.create_all(conn, checkfirst=True)


def _v13_slack_close_lease(conn: Connection) -> None:
    # slack_messages.close_lease_until: one replica claims a message's closing update. A
    # database created by this version's v12 already has it.
    columns = {str(c["name"]) for c in inspect(conn).get_columns("slack_messages")}
    if "close_lease_until" not in columns:
        kind = UtcDateTime().compile(dialect=conn.dialect)  # the type schema.py gives it
        conn.execute(text(f"ALTER TABLE slack_messages ADD COLUMN close_lease_until {kind}"))


MIGRATIONS: tuple[Callable[[Connection], None], ...] = (
    _v1_initial_tables,
    _v2_access_control,
    _v3_current_turn_index,
    _v4_turn_type_order_index,
    _v5_webhook_outbox,
    _v6_cluster_replicas,
    _v7_session_owner,
    _v8_pending_revision_sequence,
    _v9_clarification_deadlines,
    _v10_turn_pending_index,
    _v11_task_worktrees,
    _v12_slack,
    _v13_slack_close_lease,
)
LATEST_VERSION = len(MIGRATIONS)


def current_version(conn: Connection) -> int:
    """The database's schema version; 0 for a database Clarion never migrated."""
    if not inspect(conn).has_table(schema_version.name):
        return 0
    current = conn.execute(
        select(schema_version.c.version).order_by(schema_version.c.version.desc()).limit(1)
    ).scalar()
    return int(current or 0)


def apply_migrations(conn: Connection, upto: int = LATEST_VERSION) -> list[int]:
    _version_meta.create_all(conn, checkfirst=True)
    current = current_version(conn)
    if current > LATEST_VERSION:
        raise RuntimeError(
            f"database schema version {current} is newer than this Clarion ({LATEST_VERSION})"
        )
    applied: list[int] = []
    for version in range(current + 1, upto + 1):
        MIGRATIONS[version - 1](conn)
        conn.execute(insert(schema_version).values(version=version, applied_at=datetime.now(UTC)))
        applied.append(version)
    return applied


async def migrate(engine: AsyncEngine, *, upto: int = LATEST_VERSION) -> int:
    """Bring the database to LATEST_VERSION (`upto`: only that far, which is how tests build
    the database an earlier release left); returns the version it is at."""
    db = Db(engine)
    try:
        async with db.write() as conn:
            await db.lock_key(conn, "clarion-schema-migration")
            applied = await conn.run_sync(lambda c: apply_migrations(c, upto))
    finally:
        db.close()
    if applied:
        log.info("schema migrated", extra={"versions": applied})
    return upto
