"""`[cluster] redirect_to_owner` and CLARION_REDIRECT_TO_OWNER: off by default, the env var
over the file, and a bad value refused naming the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clarion.config import Settings
from tests.refused_start import refused_serve_line


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "clarion.toml"
    path.write_text(text)
    return str(path)


def _load(tmp_path: Path, text: str | None, **env: str) -> Settings:
    config = None if text is None else _config(tmp_path, text)
    return Settings.load(config_file=config, env={"CLARION_HOME": str(tmp_path), **env})


def test_redirect_to_owner_is_off_by_default(tmp_path: Path) -> None:
    assert _load(tmp_path, None).redirect_to_owner is False
    assert _load(tmp_path, "[cluster]\n").redirect_to_owner is False


def test_redirect_to_owner_is_read_from_the_cluster_table(tmp_path: Path) -> None:
    assert _load(tmp_path, "[cluster]\nredirect_to_owner = true\n").redirect_to_owner is True


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("on", True), ("0", False)])
def test_the_env_var_wins_over_the_file(tmp_path: Path, raw: str, expected: bool) -> None:
    text = f"[cluster]\nredirect_to_owner = {str(not expected).lower()}\n"
    settings = _load(tmp_path, text, CLARION_REDIRECT_TO_OWNER=raw)
    assert settings.redirect_to_owner is expected


@pytest.mark.parametrize(
    ("text", "env", "says"),
    [
        ('[cluster]\nredirect_to_owner = "yes"\n', {}, "cluster.redirect_to_owner"),
        ("[cluster]\nredirect = true\n", {}, "[cluster]: unknown key(s) redirect"),
        ("cluster = 1\n", {}, "[cluster] must be a table"),
        ("", {"CLARION_REDIRECT_TO_OWNER": "maybe"}, "CLARION_REDIRECT_TO_OWNER"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(
    tmp_path: Path, text: str, env: dict[str, str], says: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(says)) as raised:
        _load(tmp_path, text, **env)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_serve_stops_with_status_2_and_one_line_naming_the_key(tmp_path: Path) -> None:
    config = _config(tmp_path, "[cluster]\nredirect_to_owner = 1\n")
    line = refused_serve_line(tmp_path, config)
    assert config in line and "cluster.redirect_to_owner" in line
