"""The config file is read and parsed once per load into typed models, and every part of the
settings comes from that one parse."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clarion.config import Settings

SRC = Path(__file__).resolve().parents[2] / "src" / "clarion"

# One of every table and top-level key the file may hold.
EVERY_PART = """
public_url = "https://clarion.example"
answer_link_ttl = "2d"
answer_link_secret = "0123456789abcdef0123"
metrics_token = "token-0123456789abcdef"
worktrees_dir = "/srv/worktrees"
max_patch_bytes = 4096

[agents.claude]
command = ["claude-acp"]
start_timeout_s = 60
agent_idle_stop_after = "10m"
sandbox = "none"
[agents.claude.permissions]
allow = ["read"]
[agents.claude.waiting]
remind_after = "1h"
escalate_to = ["role:leads"]

[workspaces.team]
repository = "app"
[workspaces.team.roles]
leads = ["ann"]
[workspaces.team.waiting]
expire_after = "2d"
on_expiry = "skip"
[workspaces.team.notifications.email]
to = ["team@example.com"]
[workspaces.team.notifications.slack]
channel = "C-TEAM"

[repositories.app]
path = "/srv/app"

[[webhooks]]
url = "https://hooks.example/a"
secret = "s3cret"

[retention]
older_than = "90d"

[telemetry]
exporter = "console"

[notifications.email]
host = "smtp.example"
from = "Clarion <bot@example.com>"
to = ["ops@example.com"]

[notifications.slack]
bot_token_env = "SLACK_BOT"
signing_secret_env = "SLACK_SIGNING"
channel = "C-OPS"

[slack.users]
U1 = "ann"
"""


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[object]:
    calls: list[object] = []
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_load_reads_and_parses_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text(EVERY_PART)
    parses = _counting(monkeypatch, tomllib, "loads")
    reads = _counting(monkeypatch, Path, "read_text")
    env = {"CLARION_HOME": str(tmp_path), "SLACK_BOT": "xoxb-1", "SLACK_SIGNING": "sig"}
    settings = Settings.load(config_file=str(config), env=env)
    assert len(parses) == 1
    assert [p for p in reads if p == config] == [config]
    # Every part came from that one parse.
    assert settings.agents["claude"].waiting is not None
    assert settings.workspace_waiting["team"].expire_after is not None
    assert settings.workspace_roles == {"team": {"leads": ("ann",)}}
    assert settings.repositories.default_for("team") == "app"
    assert settings.repositories.max_patch_bytes == 4096
    assert [h.url for h in settings.webhooks] == ["https://hooks.example/a"]
    assert settings.public_url == "https://clarion.example"
    assert settings.answer_links.ttl_s == 2 * 86400
    assert settings.operations.retention_older_than_s == 90 * 86400
    assert settings.telemetry is not None and settings.telemetry.exporter == "console"
    email = settings.email.channel_for("team")
    assert email is not None and email.to == ("team@example.com",)
    assert email.host == "smtp.example"  # the workspace's table merged over the top-level one
    slack = settings.slack.channel_for("team")
    assert slack is not None and slack.channel == "C-TEAM" and slack.token == "xoxb-1"
    assert settings.slack.users == {"U1": "ann"}


def test_only_the_document_parses_the_file() -> None:
    """No part of the settings reads the file for itself: `read_config` and `tomllib` appear
    only where the file is read and parsed once."""
    readers = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if re.search(r"\bread_config\(|\btomllib\b", path.read_text())
    )
    assert readers == ["config/document.py", "config/files.py"]


def _module_imports(module: str) -> set[str]:
    """What a module of `clarion.config` imports when it is imported: its top-level imports,
    not those inside functions or under `if TYPE_CHECKING`."""
    relative = module.removeprefix("clarion.").replace(".", "/")
    path = SRC / f"{relative}.py"
    if not path.exists():
        path = SRC / relative / "__init__.py"
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_settings_types_load_without_the_models() -> None:
    """The CLI imports `clarion.config` on every start, and most commands never read the file:
    pydantic and the models load on the first read, not with the settings' types."""
    seen: set[str] = set()
    todo = ["clarion.config"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        imports = _module_imports(module)
        assert not any(name.split(".")[0] == "pydantic" for name in imports), module
        todo += [name for name in imports if name.startswith("clarion.config.")]
    assert "clarion.config.document" not in seen
    assert "clarion.config.settings" in seen


@pytest.mark.parametrize(
    ("key", "variable", "value"),
    [
        ('public_url = "ftp://not-http"', "CLARION_PUBLIC_URL", "https://from.env"),
        ('answer_link_ttl = "soon"', "CLARION_ANSWER_LINK_TTL", "5s"),
        ('metrics_token = "short"', "CLARION_METRICS_TOKEN", "e" * 20),
    ],
)
def test_a_key_its_environment_variable_overrides_is_not_read_from_the_file(
    tmp_path: Path, key: str, variable: str, value: str
) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text(key + "\n")
    with pytest.raises(ValueError, match=key.split(" ")[0]):
        Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path)})
    Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path), variable: value})


def test_a_workspace_notifications_value_not_a_table_names_the_file_and_the_key(
    tmp_path: Path,
) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text("[workspaces.team]\nnotifications = 3\n")
    with pytest.raises(ValueError, match="notifications") as refused:
        Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path)})
    assert str(refused.value) == f"{config}: [workspaces.team.notifications] must be a table"


@pytest.mark.parametrize("value", ['["skip"]', '{ value = "skip" }'])
def test_an_on_expiry_that_is_not_a_string_is_refused_naming_the_key(
    tmp_path: Path, value: str
) -> None:
    config = tmp_path / "clarion.toml"
    config.write_text(f"[workspaces.team.waiting]\non_expiry = {value}\n")
    with pytest.raises(ValueError, match="on_expiry") as refused:
        Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path)})
    assert str(refused.value).startswith(f"{config}: workspaces.team.waiting.on_expiry must be")


def test_a_mistake_in_the_top_level_channel_is_named_where_it_is_written(tmp_path: Path) -> None:
    """A workspace's channel inherits the top-level table's keys; a bad one is reported at the
    top level, not in the workspace that inherited it."""
    config = tmp_path / "clarion.toml"
    config.write_text(
        '[notifications.email]\nhost = "smtp"\nport = 0\nfrom = "a@b.c"\nto = ["o@b.c"]\n'
        '[workspaces.team.notifications.email]\nto = ["t@b.c"]\n'
    )
    with pytest.raises(ValueError, match="port") as refused:
        Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path)})
    assert str(refused.value) == f"{config}: notifications.email.port must be a port number"
