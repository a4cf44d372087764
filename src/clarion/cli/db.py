"""`clarion db`: the schema version and its migrations, a backup (and its restore:
db_restore.py), and pruning what finished long ago. Each opens the database directly, with
or without a server running on it.

The database layer is imported inside each command: every other `clarion` command starts
without it.

Exit codes: 0 done (status: up to date), 1 migrations pending (status), no database at a
SQLite path (the commands that only read never create one) or the command failed, 2 usage (a
database URL of no kind Clarion serves, a bad or too long duration, a backup file that exists,
a backup or restore of PostgreSQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Coroutine
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from clarion.cli import db_restore
from clarion.cli.database import DatabaseOpt, database_url, missing_database, require_database
from clarion.cli.errors import fail
from clarion.config.files import redacted
from clarion.domain.waiting import parse_duration

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from clarion.store.retention import Pruned

T = TypeVar("T")

# What `db upgrade --sql` reads when the SQLite file it names does not exist yet.
_EMPTY_SQLITE = "sqlite:///:memory:"

db_app = typer.Typer(
    help="The database: schema version and migrations, backup, pruning.",
    no_args_is_help=True,
    add_completion=False,
)


@db_app.callback()
def _group() -> None:
    """The database: schema version and migrations, backup, pruning."""


@contextlib.asynccontextmanager
async def _engine(url: str) -> AsyncIterator[AsyncEngine]:
    from clarion.store import open_engine

    engine = open_engine(url)
    try:
        yield engine
    finally:
        await engine.dispose()


def _run(url: str, work: Coroutine[Any, Any, T]) -> T:
    try:
        return asyncio.run(work)
    except typer.Exit:
        raise
    except Exception as exc:
        raise fail(f"{redacted(url)}: {exc}") from exc


@db_app.command("status")
def status(database: str | None = DatabaseOpt) -> None:
    """Print the schema version and `up to date` or the pending migrations (exit 1)."""
    from clarion.store.db.schema_status import schema_status

    url = database_url(database)
    require_database(url)

    async def read() -> tuple[int, int, tuple[int, ...]]:
        async with _engine(url) as engine:
            found = await schema_status(engine)
            return found.version, found.latest, found.pending

    version, latest, pending = _run(url, read())
    if version > latest:
        typer.echo(f"schema version {version}: newer than this Clarion ({latest})")
        raise typer.Exit(1)
    if not pending:
        typer.echo(f"schema version {version}: up to date")
        return
    listed = ", ".join(str(v) for v in pending)
    typer.echo(f"schema version {version} of {latest}: pending migrations {listed}")
    raise typer.Exit(1)


@db_app.command("upgrade")
def upgrade(
    sql: bool = typer.Option(False, "--sql", help="Print the SQL for review; change nothing"),
    database: str | None = DatabaseOpt,
) -> None:
    """Run the pending migrations (with --sql: print their SQL instead)."""
    from clarion.store import migrate
    from clarion.store.db.schema_status import pending_sql, schema_status

    url = database_url(database)
    # A preview changes nothing, so it creates no file either: with no database there yet,
    # it shows the SQL that would create one, read from an empty database in memory.
    missing = missing_database(url) if sql else None
    source = _EMPTY_SQLITE if missing is not None else url

    async def work() -> tuple[int, int, list[str]]:
        async with _engine(source) as engine:
            before = await schema_status(engine)
            if sql:
                return before.version, before.version, list(await pending_sql(engine))
            after = await migrate(engine)
            return before.version, after, []

    before, after, statements = _run(url, work())
    if sql:
        if not statements:
            typer.echo(f"-- schema version {before}: up to date, nothing to run")
            return
        typer.echo(f"-- clarion db upgrade: schema version {before} -> the latest")
        if missing is not None:
            typer.echo(f"-- no database at {missing} yet: the SQL that creates one")
        sqlite = url.lower().startswith("sqlite")
        if sqlite:  # psql takes -1 instead (see docs/operations.md)
            typer.echo("-- one transaction, as `clarion db upgrade` runs it: sqlite3 DB < FILE")
            typer.echo("BEGIN;")
        else:
            typer.echo("-- run it in one transaction, as `clarion db upgrade` does: psql -1 -f")
        for statement in statements:
            typer.echo(statement)
        if sqlite:
            typer.echo("COMMIT;")
        return
    if before == after:
        typer.echo(f"schema version {after}: up to date, nothing to run")
    else:
        typer.echo(f"schema upgraded from version {before} to {after}")


@db_app.command("backup")
def backup(
    file: Annotated[Path, typer.Argument(help="The backup file to write (must not exist)")],
    database: str | None = DatabaseOpt,
) -> None:
    """SQLite: an online backup (consistent while a server writes). PostgreSQL: use pg_dump."""
    url = database_url(database)
    if not url.startswith("sqlite"):
        raise fail(
            "backup copies SQLite databases only; for PostgreSQL use pg_dump, for example: "
            f"pg_dump --format=custom --file {file} '{redacted(url)}'",
            2,
        )
    if file.exists():
        raise fail(f"{file} exists; choose a new file", 2)
    from sqlalchemy.engine import make_url

    source_path = make_url(url).database or ""
    if not Path(source_path).is_file():
        raise fail(f"no database at {source_path}")
    try:
        with (
            contextlib.closing(sqlite3.connect(source_path)) as source,
            contextlib.closing(sqlite3.connect(file)) as target,
        ):
            # Page by page, so a running server's writes are never blocked for long.
            source.backup(target, pages=1024)
    except sqlite3.Error as exc:
        file.unlink(missing_ok=True)
        raise fail(f"backup of {source_path} failed: {exc}") from exc
    typer.echo(f"backed up {source_path} to {file} ({file.stat().st_size} bytes)")


def _describe(pruned: Pruned) -> str:
    return (
        f"{pruned.sessions} sessions, {pruned.turns} turns, {pruned.messages} messages, "
        f"{pruned.webhook_deliveries} webhook deliveries"
    )


@db_app.command("prune")
def prune_command(
    older_than: str = typer.Option(
        ..., "--older-than", help="Age such as 90d, 12h: what finished before then goes"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count only; delete nothing"),
    database: str | None = DatabaseOpt,
) -> None:
    """Delete finished sessions' rows older than the cutoff; never a task still running or
    waiting. Prints what it deleted (or, with --dry-run, would)."""
    from clarion.runtime.clock import SystemClock
    from clarion.store import SqlStore
    from clarion.store.db.schema_status import schema_status
    from clarion.store.retention import prune
    from clarion.workspaces.pruning import count_worktrees_pruned_by, remove_orphaned_worktrees

    try:
        seconds = parse_duration(older_than).seconds
        cutoff = SystemClock().now() - timedelta(seconds=seconds)
    except ValueError as exc:
        raise fail(f"--older-than {exc}", 2) from exc
    except OverflowError as exc:  # further back than any date
        raise fail(f"--older-than {older_than.strip()} is too long ago to be a date", 2) from exc
    url = database_url(database)
    require_database(url)

    def report(done: int, total: int) -> None:
        typer.echo(f"… {done}/{total} sessions", err=True)

    async def work() -> tuple[str, Pruned, int]:
        async with _engine(url) as engine:
            found = await schema_status(engine)
            if found.pending or found.newer_than_code:
                raise fail(
                    f"the schema is at version {found.version}, this Clarion's is "
                    f"{found.latest}: run `clarion db upgrade` first"
                )
            store = SqlStore(engine, SystemClock())
            rows, tasks = store.stores.retention, store.stores.worktrees
            try:
                # A dry run counts before anything changes: the tasks the prune would
                # leave without sessions (and those without already).
                worktrees = await count_worktrees_pruned_by(tasks, cutoff) if dry_run else []
                pruned = await prune(rows, cutoff, dry_run=dry_run, progress=report)
                if not dry_run:
                    # The worktrees of the tasks whose sessions are all gone now (their
                    # branches stay).
                    worktrees = await remove_orphaned_worktrees(tasks)
            finally:
                store.close()
            return cutoff.isoformat(timespec="seconds"), pruned, len(worktrees)

    before, pruned, worktrees = _run(url, work())
    verb = "would delete" if dry_run else "deleted"
    typer.echo(f"{verb} {_describe(pruned)} that finished before {before}")
    if worktrees:
        typer.echo(f"{'would remove' if dry_run else 'removed'} {worktrees} task worktrees")


def register(app: typer.Typer) -> None:
    db_restore.register(db_app)
    app.add_typer(db_app, name="db")
