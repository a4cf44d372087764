"""`clarion doctor` and `clarion agents check` report each profile's sandbox: what its agents
run under, an `auto` profile that falls back to none as a warning, and a `bwrap` profile that
bubblewrap cannot run as a failure with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from clarion.agents import sandbox
from tests.conftest import require_bubblewrap
from tests.ops.test_agents_check import agents_check
from tests.ops.test_doctor import _row, doctor


def _config(tmp_path: Path, body: str) -> str:
    path = tmp_path / "clarion.toml"
    path.write_text(body)
    return str(path)


def _bwrap_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bwrap fails (exit 1): no userns")


def test_doctor_and_agents_check_say_bwrap_where_it_works(tmp_path: Path) -> None:
    require_bubblewrap()
    config = _config(tmp_path, '[agents.open]\ncommand = ["sh"]\nsandbox = "none"\n')
    _, out = doctor("--config", config, "--database", f"sqlite:///{tmp_path / 'c.db'}")
    assert "bwrap (bubblewrap works)" in _row(out, "sandbox builtin"), out
    assert 'none (sandbox = "none")' in _row(out, "sandbox open"), out
    code, out = agents_check("builtin")
    assert code == 0, out
    assert " ok " in _row(out, "builtin: sandbox") and "bwrap" in _row(out, "builtin: sandbox")


def test_doctor_warns_of_an_auto_fallback_and_fails_a_bwrap_profile_it_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bwrap_fails(monkeypatch)
    config = _config(tmp_path, '[agents.strict]\ncommand = ["sh"]\nsandbox = "bwrap"\n')
    code, out = doctor("--config", config, "--database", f"sqlite:///{tmp_path / 'c.db'}")
    assert code == 1
    fallback = _row(out, "sandbox builtin")
    assert (
        " ok " in fallback and "WARNING, runs unsandboxed" in fallback and "no userns" in fallback
    )
    refused = _row(out, "sandbox strict")
    assert "FAIL" in refused and "no userns" in refused


def test_agents_check_fails_a_bwrap_profile_bubblewrap_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bwrap_fails(monkeypatch)
    config = _config(tmp_path, '[agents.strict]\ncommand = ["sh"]\nsandbox = "bwrap"\n')
    code, out = agents_check("strict", "--config", config)
    assert code == 1
    assert "FAIL" in _row(out, "strict: sandbox") and "no userns" in _row(out, "strict: sandbox")
