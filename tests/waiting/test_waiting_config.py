"""`[agents.NAME.waiting]` and `[workspaces.NAME.waiting]`: read from the config file, and a
bad value refused with the file and the key named, by `Settings.load` and by `clarion serve`
(exit status 2, one line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clarion.config import BUILTIN_PROFILE, Settings
from clarion.domain.waiting import OnExpiry, Role, parse_duration
from tests.refused_start import refused_serve_line


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "clarion.toml"
    path.write_text(text)
    return str(path)


def test_profile_and_workspace_policies_are_read(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """
[agents.builtin.waiting]
remind_after = "30m"
expire_after = "8h"
on_expiry = "default"

[agents.other]
command = ["true"]

[workspaces.alpha.waiting]
escalate_after = "2h"
escalate_to = ["bob", "carol"]
""",
    )
    settings = Settings.load(config_file=config, env={"CLARION_HOME": str(tmp_path)})
    builtin = settings.agents[BUILTIN_PROFILE]
    assert builtin.waiting is not None
    assert builtin.waiting.remind_after == parse_duration("30m")
    assert builtin.waiting.on_expiry is OnExpiry.DEFAULT
    assert builtin.command[-1] == "clarion.agents.builtin", "the built-in agent still runs"
    assert settings.agents["other"].waiting is None
    alpha = settings.workspace_waiting["alpha"]
    assert alpha.escalate_to == ("bob", "carol") and alpha.escalate_after == parse_duration("2h")


def test_roles_are_read_and_escalate_to_may_name_them_beside_users(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """
[agents.builtin.waiting]
escalate_after = "1h"
escalate_to = ["alice", { role = "leads" }]

[workspaces.alpha]
roles = { reviewers = ["bob", " carol "] }

[workspaces.alpha.waiting]
escalate_after = "2h"
escalate_to = [{ role = "reviewers" }, "erin"]

[workspaces.beta.roles]
leads = ["dave"]
""",
    )
    settings = Settings.load(config_file=config, env={"CLARION_HOME": str(tmp_path)})
    assert settings.workspace_roles == {
        "alpha": {"reviewers": ("bob", "carol")},
        "beta": {"leads": ("dave",)},
    }
    assert settings.workspace_waiting["alpha"].escalate_to == (Role("reviewers"), "erin")
    profile = settings.agents[BUILTIN_PROFILE].waiting
    assert profile is not None and profile.escalate_to == ("alice", Role("leads"))


def test_escalate_to_names_a_role_as_role_colon_name_too(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        """
[agents.builtin.waiting]
escalate_to = ["alice", "role:leads"]

[workspaces.alpha]
roles = { reviewers = ["bob"] }

[workspaces.alpha.waiting]
escalate_to = [" role:reviewers ", "erin"]

[workspaces.beta.roles]
leads = ["dave"]
""",
    )
    settings = Settings.load(config_file=config, env={"CLARION_HOME": str(tmp_path)})
    assert settings.workspace_waiting["alpha"].escalate_to == (Role("reviewers"), "erin")
    profile = settings.agents[BUILTIN_PROFILE].waiting
    assert profile is not None and profile.escalate_to == ("alice", Role("leads"))


ROLES = '[workspaces.alpha.roles]\nreviewers = ["bob"]\n'
BAD_ROLES = [
    (
        ROLES + '[workspaces.alpha.waiting]\nescalate_to = [{ role = "leads" }]\n',
        "workspaces.alpha.waiting.escalate_to: unknown role 'leads'",
    ),
    (
        # A role of another workspace is not this workspace's.
        ROLES + '[workspaces.beta.waiting]\nescalate_to = [{ role = "reviewers" }]\n',
        "workspaces.beta.waiting.escalate_to: unknown role 'reviewers'",
    ),
    (
        ROLES + '[agents.builtin.waiting]\nescalate_to = [{ role = "leads" }]\n',
        "agents.builtin.waiting.escalate_to: unknown role 'leads'",
    ),
    (
        ROLES + '[workspaces.alpha.waiting]\nescalate_to = [{ name = "reviewers" }]\n',
        "workspaces.alpha.waiting.escalate_to",
    ),
    (
        ROLES + '[workspaces.alpha.waiting]\nescalate_to = [{ role = "reviewers", x = 1 }]\n',
        "workspaces.alpha.waiting.escalate_to",
    ),
    (
        ROLES + '[workspaces.alpha.waiting]\nescalate_to = ["role:leads"]\n',
        "workspaces.alpha.waiting.escalate_to: unknown role 'leads'",
    ),
    (
        ROLES + '[workspaces.alpha.waiting]\nescalate_to = ["role:"]\n',
        "workspaces.alpha.waiting.escalate_to",
    ),
    (ROLES + "[workspaces.alpha.waiting]\nescalate_to = [3]\n", "waiting.escalate_to"),
    ('[workspaces.alpha]\nroles = ["bob"]\n', "workspaces.alpha.roles"),
    ("[workspaces.alpha.roles]\nreviewers = []\n", "workspaces.alpha.roles.reviewers"),
    ('[workspaces.alpha.roles]\nreviewers = "bob"\n', "workspaces.alpha.roles.reviewers"),
    ('[workspaces.alpha.roles]\nreviewers = ["bob", ""]\n', "workspaces.alpha.roles.reviewers"),
]


@pytest.mark.parametrize(("text", "message"), BAD_ROLES)
def test_a_bad_role_or_an_unknown_one_names_the_file_and_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    config = _config(tmp_path, text)
    with pytest.raises(ValueError, match=r"escalate_to|roles") as raised:
        Settings.load(config_file=config, env={"CLARION_HOME": str(tmp_path)})
    assert config in str(raised.value) and message in str(raised.value)


BAD = [
    ('[agents.builtin.waiting]\nremind_after = "8 hours"\n', "agents.builtin.waiting.remind_after"),
    ('[agents.builtin.waiting]\nexpire_after = "0m"\n', "agents.builtin.waiting.expire_after"),
    ('[agents.builtin.waiting]\non_expiry = "later"\n', "agents.builtin.waiting.on_expiry"),
    ("[workspaces.alpha.waiting]\nescalate_after = 5\n", "workspaces.alpha.waiting.escalate_after"),
    ('[workspaces.alpha.waiting]\nescalate_to = "bob"\n', "workspaces.alpha.waiting.escalate_to"),
    ('[workspaces.alpha.waiting]\nremind_every = "1h"\n', "workspaces.alpha.waiting.remind_every"),
]


@pytest.mark.parametrize(("text", "key"), BAD)
def test_a_bad_value_names_the_file_and_the_key(tmp_path: Path, text: str, key: str) -> None:
    config = _config(tmp_path, text)
    with pytest.raises(ValueError, match="waiting") as raised:
        Settings.load(config_file=config, env={"CLARION_HOME": str(tmp_path)})
    assert config in str(raised.value) and key in str(raised.value)


def test_serve_stops_with_status_2_and_one_line_naming_file_and_key(tmp_path: Path) -> None:
    config = _config(tmp_path, '[agents.builtin.waiting]\nexpire_after = "8 hours"\n')
    line = refused_serve_line(tmp_path, config)
    assert config in line and "agents.builtin.waiting.expire_after" in line


def test_serve_refuses_an_unknown_role_with_status_2_and_one_line(tmp_path: Path) -> None:
    config = _config(tmp_path, '[agents.builtin.waiting]\nescalate_to = [{ role = "leads" }]\n')
    line = refused_serve_line(tmp_path, config)
    assert config in line and "agents.builtin.waiting.escalate_to" in line
    assert "unknown role 'leads'" in line
