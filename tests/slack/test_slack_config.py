"""`[notifications.slack]`, per workspace overrides and `[slack.users]`: read, merged key by key,
secrets from the named environment variables, and bad values refused naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from clarion.config import Settings
from clarion.config.slack import DEFAULT_API_URL, load_slack
from clarion.domain.notification_events import EVENTS
from tests import forkserver

CONFIG = """
[notifications.slack]
bot_token_env = "SLACK_BOT_TOKEN"
signing_secret_env = "SLACK_SIGNING_SECRET"
channel = "C0QUESTIONS"
events = ["clarification.requested", "clarification.answered"]

[workspaces.ops.notifications.slack]
channel = "C0OPS"
api_url = "http://127.0.0.1:9/api"

[slack.users]
U0123 = "alice"
U0456 = "bob"
"""
ENV = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s3cret"}


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


def test_the_top_level_channel_a_workspace_override_and_the_user_map_are_read(
    tmp_path: Path,
) -> None:
    slack = load_slack(_write(tmp_path, CONFIG), ENV)
    default = slack.default
    assert default is not None
    assert (default.key, default.channel, default.api_url) == (
        "slack:default",
        "C0QUESTIONS",
        DEFAULT_API_URL,
    )
    assert (default.token, default.signing_secret) == ("xoxb-1", "s3cret")
    assert default.events == {"clarification.requested", "clarification.answered"}
    ops = slack.channel_for("ops")
    assert ops is not None and ops.key == "slack:workspace:ops"
    assert ops.channel == "C0OPS" and ops.token == "xoxb-1"  # inherited
    assert ops.api_url == "http://127.0.0.1:9/api/"  # slack-sdk appends method names
    assert slack.channel_for("other") is default
    assert slack.users == {"U0123": "alice", "U0456": "bob"}
    assert "xoxb-1" not in repr(default) and "s3cret" not in repr(default)


def test_settings_carry_the_slack_table_with_every_event_by_default(tmp_path: Path) -> None:
    text = CONFIG.replace('events = ["clarification.requested", "clarification.answered"]\n', "")
    settings = Settings.load(config_file=_write(tmp_path, text), env=ENV)
    assert settings.slack.default is not None
    assert settings.slack.default.events == frozenset(EVENTS)


@pytest.mark.parametrize(
    ("env", "change", "named"),
    [
        ({"SLACK_SIGNING_SECRET": "s"}, None, "bot_token_env"),
        ({"SLACK_BOT_TOKEN": "t"}, None, "signing_secret_env"),
        (ENV, ('channel = "C0QUESTIONS"', 'channel = "C0Q"\napi_url = "ftp://x"'), "api_url"),
        (ENV, ('channel = "C0QUESTIONS"', 'channel = ""'), "channel"),
        (ENV, ('"clarification.answered"', '"nope"'), "events"),
        (ENV, ('channel = "C0QUESTIONS"', 'channel = "C"\ncolour = "red"'), "colour"),
        (ENV, ('U0123 = "alice"', "U0123 = 7"), "slack.users.U0123"),
    ],
)
def test_a_bad_slack_setting_is_refused_naming_the_key(
    tmp_path: Path, env: dict[str, str], change: tuple[str, str] | None, named: str
) -> None:
    text = CONFIG if change is None else CONFIG.replace(*change)
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        load_slack(_write(tmp_path, text), env)


def test_serve_exits_2_naming_the_missing_signing_secret_variable(tmp_path: Path) -> None:
    config = _write(tmp_path, CONFIG)
    done = forkserver.run(
        ["serve", "--config", str(config), "--port", "0"],
        env={"PATH": "/usr/bin:/bin", "SLACK_BOT_TOKEN": "t", "HOME": str(tmp_path)},
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2
    assert "signing_secret_env" in done.stderr and "SLACK_SIGNING_SECRET" in done.stderr


def test_the_answerers_fallback_look_is_ten_seconds_unless_set_and_a_bad_value_is_named(
    tmp_path: Path,
) -> None:
    config = _write(tmp_path, CONFIG)
    assert load_slack(config, ENV).poll_s == 10.0
    assert load_slack(config, {**ENV, "CLARION_SLACK_POLL_S": "600"}).poll_s == 600.0
    with pytest.raises(ValueError, match="CLARION_SLACK_POLL_S"):
        load_slack(config, {**ENV, "CLARION_SLACK_POLL_S": "0"})
