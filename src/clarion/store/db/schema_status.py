"""`clarion db status` and `clarion db upgrade [--sql]`: the schema version, the migrations a
database still needs, and the SQL they would run.

The SQL preview runs the pending migrations for real, inside the migration lock and one write
transaction, records every statement the driver receives, then rolls the transaction back:
both databases have transactional DDL, so the database is left as it was, and the SQL shown
is exactly what `upgrade` would send to this database (its dialect, its current version, the
`IF NOT EXISTS` checks as they resolve against it). Catalogue reads are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, event
from sqlalchemy.ext.asyncio import AsyncEngine

from clarion.store.db.engine import Db
from clarion.store.db.literal_sql import render
from clarion.store.db.migrations import LATEST_VERSION, apply_migrations, current_version

_LOCK = "clarion-schema-migration"
_READS = ("SELECT", "PRAGMA", "WITH", "SHOW")


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    version: int
    latest: int

    @property
    def pending(self) -> tuple[int, ...]:
        return tuple(range(self.version + 1, self.latest + 1))

    @property
    def newer_than_code(self) -> bool:
        return self.version > self.latest


class SchemaBehind(RuntimeError):
    """A server told not to migrate found a database that needs migrations."""

    def __init__(self, status: SchemaStatus) -> None:
        pending = ", ".join(str(v) for v in status.pending)
        super().__init__(
            f"the database schema is at version {status.version} and this Clarion needs "
            f"{status.latest} (pending migrations: {pending}); run `clarion db upgrade` "
            "(or `clarion db upgrade --sql` to review the SQL first), or start without "
            "--no-migrate"
        )
        self.status = status


async def schema_status(engine: AsyncEngine) -> SchemaStatus:
    db = Db(engine)
    try:
        async with db.read() as conn:
            version = await conn.run_sync(current_version)
    finally:
        db.close()
    return SchemaStatus(version=version, latest=LATEST_VERSION)


async def require_current(engine: AsyncEngine) -> None:
    """SchemaBehind unless the database is at this Clarion's schema version."""
    found = await schema_status(engine)
    if found.pending:
        raise SchemaBehind(found)
    if found.newer_than_code:
        raise RuntimeError(
            f"database schema version {found.version} is newer than this Clarion ({found.latest})"
        )


class _RolledBack(Exception):
    def __init__(self, statements: list[str]) -> None:
        self.statements = statements


def _render(statement: str, parameters: Any, dialect: str) -> list[str]:
    """Literal SQL, its values in place of the placeholders: the preview is a script that
    `psql -1 -f` or `sqlite3` runs as it is."""
    return [text.strip().rstrip(";") + ";" for text in render(statement, parameters, dialect)]


def _recorded(conn: Connection) -> list[str]:
    statements: list[str] = []
    dialect = conn.dialect.name

    def record(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if not statement.lstrip().upper().startswith(_READS):
            statements.extend(_render(statement, parameters, dialect))

    event.listen(conn, "before_cursor_execute", record)
    try:
        apply_migrations(conn)
    finally:
        event.remove(conn, "before_cursor_execute", record)
    raise _RolledBack(statements)


async def pending_sql(engine: AsyncEngine) -> Sequence[str]:
    """The statements `upgrade` would run now, in order; the database is left unchanged."""
    db = Db(engine)
    try:
        async with db.write() as conn:
            await db.lock_key(conn, _LOCK)
            await conn.run_sync(_recorded)
    except _RolledBack as done:
        return done.statements
    finally:
        db.close()
    raise AssertionError("unreachable: the preview always rolls back")
