"""`clarion db restore` (SQLite) and the documented pg_dump/pg_restore steps (PostgreSQL): a
round trip gives back the data the backup held; a restore is refused while a server serves
the database, and changes nothing then."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clarion.cli.app import app
from clarion.store.db.migrations import LATEST_VERSION
from tests.e2e.harness import ServerProcess


def clarion(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _titles(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [r[0] for r in conn.execute("SELECT title FROM tasks ORDER BY title")]


def _server_with_tasks(tmp_path: Path, url: str, *titles: str) -> ServerProcess:
    workdir = tmp_path / f"server-{len(list(tmp_path.glob('server-*')))}"
    workdir.mkdir()
    server = ServerProcess(database_url=url, workdir=workdir)
    server.start()
    for title in titles:
        server.create_task(title)
    return server


def test_a_sqlite_backup_restores_the_data_it_held_and_not_while_a_server_serves(
    tmp_path: Path,
) -> None:
    live = tmp_path / "data" / "clarion.db"
    url = f"sqlite:///{live}"
    server = _server_with_tasks(tmp_path, url, "before the backup")
    backup = tmp_path / "backup.db"
    code, _, err = clarion("db", "backup", str(backup), "--database", url)
    assert code == 0, err
    server.create_task("after the backup")

    # Refused while the server holds the database: nothing changes.
    code, _, err = clarion("db", "restore", str(backup), "--database", url)
    assert code == 3, err
    assert "another Clarion server" in err and "restore refused" in err
    server.stop()
    assert _titles(live) == ["after the backup", "before the backup"]

    code, out, err = clarion("db", "restore", str(backup), "--database", url)
    assert code == 0, err
    assert out.strip() == f"restored {live} from {backup} (schema version {LATEST_VERSION})"
    assert _titles(live) == ["before the backup"]
    assert clarion("db", "status", "--database", url)[0] == 0

    # A server starts on the restored database and serves what it held.
    server.start()
    assert [t["title"] for t in server.ok("GET", "/tasks")["tasks"]] == ["before the backup"]
    server.stop()


def test_restore_refuses_what_is_not_a_clarion_backup_and_points_postgresql_to_pg_restore(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'clarion.db'}"
    code, _, err = clarion("db", "restore", str(tmp_path / "none.db"), "--database", url)
    assert code == 2 and "no backup file" in err
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    code, _, err = clarion("db", "restore", str(junk), "--database", url)
    assert code == 1 and "not a Clarion database backup" in err
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    code, _, err = clarion("db", "restore", str(empty), "--database", url)
    assert code == 1 and "not a Clarion database backup" in err
    assert not (tmp_path / "clarion.db").exists()
    code, _, err = clarion("db", "restore", str(junk), "--database", "postgresql://u@h/d")
    assert code == 2 and "pg_restore" in err


@pytest.mark.postgres
def test_the_documented_pg_dump_and_pg_restore_steps_round_trip(
    tmp_path: Path, new_database_url: Callable[[str], str]
) -> None:
    if shutil.which("pg_dump") is None or shutil.which("pg_restore") is None:
        pytest.skip("pg_dump and pg_restore are not installed")
    source, target = new_database_url("postgres"), new_database_url("postgres")
    server = _server_with_tasks(tmp_path, source, "kept in the dump")
    dump = tmp_path / "clarion.dump"
    # The steps docs/operations.md gives, as written there.
    subprocess.run(
        ["pg_dump", "--format=custom", "--file", str(dump), source], check=True, timeout=120
    )
    server.stop()
    subprocess.run(
        [
            "pg_restore",
            "--clean",
            "--if-exists",
            "--no-owner",
            "--single-transaction",
            "--exit-on-error",
            "--dbname",
            target,
            str(dump),
        ],
        check=True,
        timeout=120,
    )
    code, out, _ = clarion("db", "status", "--database", target)
    assert (code, out.strip()) == (0, f"schema version {LATEST_VERSION}: up to date")
    restored = _server_with_tasks(tmp_path, target)
    assert [t["title"] for t in restored.ok("GET", "/tasks")["tasks"]] == ["kept in the dump"]
    restored.stop()
