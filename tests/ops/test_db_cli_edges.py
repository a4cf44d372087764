"""`clarion db` at its edges, on both databases: the SQL preview is a script `psql -1 -f` and
`sqlite3` apply as it is; the commands that only read never create a database; a database
URL of no kind Clarion serves, or a cutoff before any date, is a usage error (exit 2) in one
line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clarion.cli.app import app
from clarion.store.db.migrations import LATEST_VERSION
from tests import forkserver

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def clarion(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _apply(kind: str, url: str, script: Path) -> subprocess.CompletedProcess[str]:
    if kind == "sqlite":
        path = url.removeprefix("sqlite:///")
        command = ["sqlite3", "-bail", path]
        with script.open() as stdin:
            return subprocess.run(
                command, stdin=stdin, capture_output=True, text=True, timeout=120, check=False
            )
    command = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-1", "-f", str(script), url]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_upgrade_preview_applies_as_it_is_to_an_empty_database(
    db_kind: str, db_url: str, tmp_path: Path
) -> None:
    tool = "sqlite3" if db_kind == "sqlite" else "psql"
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    code, out, err = clarion("db", "upgrade", "--sql", "--database", db_url)
    assert code == 0, err
    assert "$1" not in out and "?" not in out and "parameters" not in out
    if db_kind == "sqlite":
        # The preview created nothing: the SQL is read from an empty database in memory.
        assert not Path(db_url.removeprefix("sqlite:///")).exists()
        assert "-- no database at" in out
    else:  # the preview rolled back: the database is still empty
        assert clarion("db", "status", "--database", db_url)[0] == 1
    script = tmp_path / "upgrade.sql"
    script.write_text(out)

    applied = _apply(db_kind, db_url, script)
    assert applied.returncode == 0, applied.stderr

    code, out, _ = clarion("db", "status", "--database", db_url)
    assert (code, out.strip()) == (0, f"schema version {LATEST_VERSION}: up to date")
    code, out, _ = clarion("db", "upgrade", "--database", db_url)
    assert code == 0 and "nothing to run" in out


@pytest.mark.parametrize("command", [["db", "status"], ["db", "prune", "--older-than", "9d"]])
def test_a_read_on_a_mistyped_sqlite_path_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "no" / "such" / "clarion.db"
    code, out, err = clarion(*command, "--database", f"sqlite:///{missing}")
    assert code == 1, out + err
    assert err.strip() == f"clarion: no database at {missing}"
    assert not (tmp_path / "no").exists()


def test_doctor_on_a_mistyped_sqlite_path_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "clarion.db"
    result = CliRunner().invoke(
        app,
        ["doctor", "--database", f"sqlite:///{missing}", "--bus", "memory"],
        env={"COLUMNS": "250", "NO_COLOR": "1", "CLARION_CONFIG": ""},
    )
    assert result.exit_code == 1, result.stdout
    row = next(line for line in result.stdout.splitlines() if "database" in line)
    assert "FAIL" in row and f"no database at {missing}" in row
    assert not (tmp_path / "no").exists()


def test_prune_before_any_date_is_a_usage_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert clarion("db", "upgrade", "--database", url)[0] == 0
    code, _, err = clarion("db", "prune", "--older-than", "99999999999999d", "--database", url)
    assert code == 2
    assert err.strip().count("\n") == 0 and "--older-than" in err


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["doctor"], ["db", "status"]])
def test_an_unsupported_database_url_is_one_line_and_exit_2(
    tmp_path: Path, command: list[str]
) -> None:
    done = forkserver.run(
        [*command, "--database", "bogus://x"],
        env={**os.environ, "CLARION_HOME": str(tmp_path / "home"), "CLARION_CONFIG": ""},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "clarion: unsupported database URL 'bogus://x': use sqlite:///PATH or postgresql://..."
    ], done.stderr
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").iterdir())
