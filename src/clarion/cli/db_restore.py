"""`clarion db restore FILE`: put a `clarion db backup` file back as the SQLite database.

It holds the database's single-server lock while it copies, so it refuses while a server
serves the database (exit 3, naming it, as a second `clarion serve` would be refused), and no
server starts on a half-restored file. The copy goes through SQLite's backup API into the
database itself, page by page inside one write lock: readers see the old database or the
restored one, never a mix, and the WAL is dealt with by SQLite. PostgreSQL has pg_restore
(docs/operations.md), so `--database postgresql://...` is a usage error that says so.

Exit codes: 0 restored; 1 the file is not a Clarion database, or the copy failed; 2 usage (no
such file, PostgreSQL, an unsupported URL); 3 a server holds the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Annotated

import typer

from clarion.cli.database import DatabaseOpt, database_url, sqlite_file
from clarion.cli.errors import fail
from clarion.config.files import redacted


def _schema_version(file: Path) -> int:
    """The schema version the backup file records; ValueError if it is no Clarion database."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True)) as conn:
            checked = conn.execute("PRAGMA quick_check").fetchone()
            if checked is None or checked[0] != "ok":
                raise ValueError(f"{file} is damaged ({checked})")
            row = conn.execute("SELECT max(version) FROM clarion_schema_version").fetchone()
    except sqlite3.Error as exc:
        raise ValueError(f"{file} is not a Clarion database backup: {exc}") from exc
    if row is None or row[0] is None:
        raise ValueError(f"{file} is not a Clarion database backup: it has no schema version")
    return int(row[0])


def _copy(source: Path, target: Path) -> None:
    with (
        contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)


async def _restore_held(url: str, source: Path, target: Path) -> None:
    # Imported here: every other `clarion` command starts without the database layer.
    from clarion.store.db.single_server import single_server

    async with single_server(url):
        await asyncio.to_thread(_copy, source, target)


def restore(
    file: Annotated[Path, typer.Argument(help="A file written by `clarion db backup`")],
    database: str | None = DatabaseOpt,
) -> None:
    """SQLite: replace the database with a `clarion db backup` file (refused while a server
    serves it). PostgreSQL: use pg_restore (docs/operations.md)."""
    from clarion.store.db.single_server import AnotherServer

    url = database_url(database)
    target = sqlite_file(url)
    if target is None:
        raise fail(
            "restore puts SQLite backups back only; for PostgreSQL use pg_restore, for "
            f"example: pg_restore --clean --if-exists --single-transaction --dbname "
            f"'{redacted(url)}' {file} (see docs/operations.md)",
            2,
        )
    if not file.is_file():
        raise fail(f"no backup file at {file}", 2)
    try:
        version = _schema_version(file)
    except ValueError as exc:
        raise fail(str(exc)) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        asyncio.run(_restore_held(url, file, target))
    except AnotherServer as exc:
        raise fail(f"{exc}; restore refused, nothing changed", 3) from exc
    except (sqlite3.Error, OSError) as exc:
        raise fail(f"restore of {target} from {file} failed: {exc}") from exc
    typer.echo(f"restored {target} from {file} (schema version {version})")


def register(db_app: typer.Typer) -> None:
    db_app.command("restore")(restore)
