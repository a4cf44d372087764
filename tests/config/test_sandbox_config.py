"""The agent sandbox's configuration: each profile's `sandbox`, `extra_read`, `extra_write`,
`home`, `pids_max` and `memory_max`, the paths every sandbox hides, and the start check that
refuses a profile this machine cannot honour."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from clarion.agents import limits, sandbox
from clarion.agents.sandbox import check_profiles, sandbox_modes
from clarion.config import BUILTIN_PROFILE, Settings


def settings_with(tmp_path: Path, profile: str) -> Settings:
    config = tmp_path / "clarion.toml"
    config.write_text(profile)
    home = tmp_path / "home"
    return Settings.load(config_file=str(config), env={"CLARION_HOME": str(home)})


def test_a_profile_sandboxes_with_auto_by_default_in_its_own_home(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, '[agents.a]\ncommand = ["a-agent"]\n')
    config = settings.agents["a"].sandbox
    assert config.mode == "auto"
    assert config.home == str((tmp_path / "home" / "agent-homes" / "a").resolve())
    assert (config.extra_read, config.extra_write) == ((), ())
    assert (config.pids_max, config.memory_max) == (None, None)
    hidden = config.hidden
    assert hidden.clarion_home == str((tmp_path / "home").resolve())
    assert hidden.database_file == str((tmp_path / "home" / "clarion.db").resolve())
    assert hidden.config_file == str((tmp_path / "clarion.toml").resolve())
    assert hidden.worktrees_dir == str((tmp_path / "home" / "worktrees").resolve())


def test_every_key_is_read(tmp_path: Path) -> None:
    settings = settings_with(
        tmp_path,
        '[agents.a]\ncommand = ["a-agent"]\nsandbox = "bwrap"\n'
        'extra_read = ["/opt/docs"]\nextra_write = ["/srv/cache"]\nhome = "/srv/agent-a"\n'
        'pids_max = 256\nmemory_max = "2G"\n'
        '[agents.b]\ncommand = ["b-agent"]\nsandbox = "none"\nmemory_max = 1048576\n',
    )
    a, b = settings.agents["a"].sandbox, settings.agents["b"].sandbox
    assert (a.mode, a.extra_read, a.extra_write) == ("bwrap", ("/opt/docs",), ("/srv/cache",))
    assert (a.home, a.pids_max, a.memory_max) == ("/srv/agent-a", 256, 2 << 30)
    assert (b.mode, b.memory_max) == ("none", 1 << 20)


def test_the_builtin_agent_lives_in_its_own_home_sandboxed_or_not(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, '[agents.builtin]\nsandbox = "none"\n')
    builtin = settings.agents[BUILTIN_PROFILE]
    own = str((tmp_path / "home" / "agent-homes" / "builtin").resolve())
    assert builtin.sandbox.mode == "none"
    assert builtin.sandbox.home == own
    assert builtin.env["HOME"] == own
    assert not [k for k in builtin.env if k.startswith("CLARION_")]


def test_a_moved_worktrees_dir_and_a_postgres_database_are_what_is_hidden(tmp_path: Path) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text(f'worktrees_dir = "{tmp_path / "trees"}"\n')
    settings = Settings.load(
        config_file=str(config),
        database_url="postgresql://postgres@127.0.0.1/x",
        env={"CLARION_HOME": str(tmp_path / "home")},
    )
    hidden = settings.agents[BUILTIN_PROFILE].sandbox.hidden
    assert hidden.worktrees_dir == str((tmp_path / "trees").resolve())
    assert hidden.database_file is None


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('sandbox = "docker"', "agents.a.sandbox"),
        ("sandbox = true", "agents.a.sandbox"),
        ('extra_read = ["relative/path"]', "agents.a.extra_read"),
        ('extra_write = "/not/a/list"', "agents.a.extra_write"),
        ('home = "relative"', "agents.a.home"),
        ("pids_max = 0", "agents.a.pids_max"),
        ('pids_max = "many"', "agents.a.pids_max"),
        ('memory_max = "lots"', "agents.a.memory_max"),
        ('memory_max = "1K"', "agents.a.memory_max"),
    ],
)
def test_a_bad_value_names_the_file_and_the_key(tmp_path: Path, line: str, key: str) -> None:
    with pytest.raises(ValueError, match=re.escape(key)) as raised:
        settings_with(tmp_path, f'[agents.a]\ncommand = ["a-agent"]\n{line}\n')
    assert str(tmp_path / "clarion.toml") in str(raised.value)
    assert key in str(raised.value)


def _bwrap_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bwrap fails (exit 1): no userns")


def test_a_bwrap_profile_without_a_working_bubblewrap_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bwrap_fails(monkeypatch)
    settings = settings_with(tmp_path, '[agents.strict]\ncommand = ["x"]\nsandbox = "bwrap"\n')
    with pytest.raises(ValueError, match=r"'strict'.*agents\.strict\.sandbox.*no userns"):
        check_profiles(settings.agents, settings.config_file)
    # The session read still says what it would run under: never an unsandboxed agent.
    assert sandbox_modes(settings.agents)("strict") == "bwrap"


def test_auto_falls_back_to_none_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _bwrap_fails(monkeypatch)
    settings = settings_with(tmp_path, '[agents.loose]\ncommand = ["x"]\n')
    with caplog.at_level(logging.WARNING, logger="clarion.agents.sandbox"):
        modes = check_profiles(settings.agents, settings.config_file)
    assert modes == {"builtin": "none", "loose": "none"}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'loose'" in m and "without a sandbox" in m and "no userns" in m for m in warned)
    assert sandbox_modes(settings.agents)("loose") == "none"


def test_a_limit_this_machine_cannot_enforce_stops_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "limits_problem", lambda: "cannot limit agents here: no cgroup")
    settings = settings_with(tmp_path, '[agents.capped]\ncommand = ["x"]\nmemory_max = "1G"\n')
    with pytest.raises(ValueError, match=r"'capped' sets memory_max.*agents\.capped\.memory_max"):
        check_profiles(settings.agents, settings.config_file)
    unlimited = settings_with(tmp_path, '[agents.free]\ncommand = ["x"]\n')
    check_profiles(unlimited.agents, unlimited.config_file)  # no limit set: nothing to refuse


def test_a_home_the_profile_env_sets_is_the_agents_home_unless_home_is_given(
    tmp_path: Path,
) -> None:
    settings = settings_with(
        tmp_path,
        '[agents.a]\ncommand = ["a"]\nenv = { HOME = "/srv/a-home" }\n'
        '[agents.b]\ncommand = ["b"]\nhome = "/srv/b"\nenv = { HOME = "/srv/ignored" }\n',
    )
    assert settings.agents["a"].sandbox.home == "/srv/a-home"
    assert settings.agents["b"].sandbox.home == "/srv/b"
