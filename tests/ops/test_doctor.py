"""`clarion doctor`: a table with a row per check and the reason for each failure; exit 0 only
when everything passes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clarion.cli.app import app
from clarion.cli.doctor import git_checks
from clarion.config import Settings
from clarion.store import migrate, open_engine
from clarion.store.db.migrations import LATEST_VERSION
from tests import forkserver
from tests.conftest import _run
from tests.ports import free_port

WIDE = {"COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb", "CLARION_CONFIG": ""}


def doctor(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["doctor", *args], env=WIDE)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


async def _migrated(url: str, upto: int = LATEST_VERSION) -> None:
    engine = open_engine(url)
    try:
        await migrate(engine, upto=upto)
    finally:
        await engine.dispose()


def _row(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if name in line)


def test_a_sound_installation_passes_every_check(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    _run(lambda: _migrated(url))
    code, out = doctor("--database", url, "--bus", "memory")
    assert code == 0, out
    for name in ("config (none)", "database sqlite", "bus memory", "agent builtin"):
        assert " ok" in _row(out, name), out
    assert "FAIL" not in out


def test_each_broken_part_fails_with_its_reason_and_the_exit_is_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    _run(lambda: _migrated(url, upto=LATEST_VERSION - 1))
    closed = free_port()
    config = tmp_path / "clarion.toml"
    config.write_text(
        '[agents.ghost]\ncommand = ["no-such-agent-binary-xyz", "--acp"]\n'
        f'[agents.fine]\ncommand = ["{sys.executable}", "-m", "clarion.agents.builtin"]\n'
        f'[[webhooks]]\nurl = "http://127.0.0.1:{closed}/hook"\nsecret = "0123456789abcdef0123"\n'
    )
    code, out = doctor("--config", str(config), "--database", url, "--bus", "nats://127.0.0.1:1")
    assert code == 1, out
    assert "migrations pending" in _row(out, "database sqlite")
    assert "clarion db upgrade" in _row(out, "database sqlite")
    assert "FAIL" in _row(out, "bus nats://127.0.0.1:1")
    assert "command not found: no-such-agent-binary-xyz" in _row(out, "agent ghost")
    assert " ok" in _row(out, "agent fine")
    assert "unreachable" in _row(out, f"webhook http://127.0.0.1:{closed}/hook")
    assert " ok" in _row(out, "config")


def test_a_config_file_that_does_not_load_is_one_failed_row(tmp_path: Path) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text("[agents.bad]\ncommand = []\n")
    code, out = doctor("--config", str(config))
    assert code == 1
    assert "command must be a non-empty list" in _row(out, "config")


def test_git_and_each_repository_get_a_row(tmp_path: Path) -> None:
    from tests.workspaces.gitrepo import make_repository

    url = f"sqlite:///{tmp_path / 'c.db'}"
    _run(lambda: _migrated(url))
    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    config = tmp_path / "clarion.toml"
    config.write_text(
        f'[repositories.app]\npath = "{repository}"\n'
        f'[repositories.gone]\npath = "{tmp_path / "nothing-here"}"\n'
        f'[repositories.nobase]\npath = "{repository}"\nbase = "release"\n'
    )
    code, out = doctor("--config", str(config), "--database", url, "--bus", "memory")
    assert code == 1, out
    assert " ok (git version" in _row(out, "│ git ")
    assert " ok" in _row(out, "repository app")
    assert "FAIL" in _row(out, "repository gone")
    assert "FAIL" in _row(out, "repository nobase")
    details = {c.name: c.detail for c in git_checks(Settings.load(config_file=str(config)))}
    assert details["repository app"] == f"ok ({repository}, base main)"
    assert details["repository gone"].endswith("nothing-here is not a directory")
    assert (
        "repositories.nobase.base: branch 'release' does not exist" in details["repository nobase"]
    )


def test_doctor_says_git_is_missing_when_a_repository_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    _run(lambda: _migrated(url))
    config = tmp_path / "clarion.toml"
    config.write_text(f'[repositories.app]\npath = "{tmp_path}"\n')
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    code, out = doctor("--config", str(config), "--database", url, "--bus", "memory")
    assert code == 1, out
    assert "not installed" in _row(out, "│ git ") and "FAIL" in _row(out, "│ git ")
    assert "FAIL" in _row(out, "repository app")


def test_an_unreachable_nats_is_reported_once_with_the_refusal_as_its_reason(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    _run(lambda: _migrated(url))
    done = forkserver.run(
        ["doctor", "--database", url, "--bus", "nats://127.0.0.1:1"],
        env={**os.environ, **WIDE},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    everything = done.stdout + done.stderr
    assert everything.count("NATS client error") == 1, everything
    row = _row(done.stdout, "bus nats://127.0.0.1:1")
    assert "FAIL" in row and "ConnectionRefusedError" in row, row
    assert "NoServersError" not in row
