"""`[repositories.NAME]`, `[workspaces.NAME] repository`, `worktrees_dir`, `max_patch_bytes`:
read from the config file, bad values refused naming the file and the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clarion.config.repositories import DEFAULT_MAX_PATCH_BYTES, Repository, load_repositories


def test_without_a_config_file_worktrees_go_under_clarion_home(tmp_path: Path) -> None:
    settings = load_repositories(None, tmp_path / "home")
    assert settings.repositories == {}
    assert settings.worktrees_dir == tmp_path / "home" / "worktrees"
    assert settings.max_patch_bytes == DEFAULT_MAX_PATCH_BYTES


def test_repositories_workspace_defaults_and_limits_are_read(tmp_path: Path) -> None:
    settings = load_repositories(
        str(
            _write(
                tmp_path,
                'worktrees_dir = "/srv/worktrees"\nmax_patch_bytes = 4096\n'
                '[repositories.app]\npath = "/srv/app"\nbase = "develop"\n'
                '[repositories.docs]\npath = "/srv/docs"\n'
                '[workspaces.team]\nrepository = "app"\n',
            )
        ),
        tmp_path,
    )
    assert settings.repositories == {
        "app": Repository("app", Path("/srv/app"), "develop"),
        "docs": Repository("docs", Path("/srv/docs"), None),
    }
    assert settings.default_for("team") == "app"
    assert settings.default_for("other") is None
    assert settings.worktrees_dir == Path("/srv/worktrees")
    assert settings.max_patch_bytes == 4096


def _write(tmp_path: Path, text: str) -> Path:
    config = tmp_path / "clarion.toml"
    config.write_text(text)
    return config


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[repositories.app]\nbase = "main"\n', "repositories.app.path"),
        ('[repositories.app]\npath = "relative"\n', "repositories.app.path"),
        ('[repositories.app]\npath = "/a"\nbase = ""\n', "repositories.app.base"),
        ('[repositories.app]\npath = "/a"\nbranch = "x"\n', "repositories.app.branch"),
        ('[workspaces.team]\nrepository = "nope"\n', "workspaces.team.repository"),
        ('worktrees_dir = "relative"\n', "worktrees_dir"),
        ("max_patch_bytes = 0\n", "max_patch_bytes"),
        ('max_patch_bytes = "big"\n', "max_patch_bytes"),
        ('repositories = "app"\n', "[repositories]"),
    ],
)
def test_a_bad_value_names_the_file_and_the_key(tmp_path: Path, text: str, key: str) -> None:
    config = _write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(key)) as caught:
        load_repositories(str(config), tmp_path)
    assert str(caught.value).startswith(str(config))
