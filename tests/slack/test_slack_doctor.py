"""`clarion doctor` checks each Slack channel's bot token with Slack's `auth.test` (ok with the
team and bot named, or failed naming Slack's error, `invalid_auth`) and then the channel the
config names, for each configured channel: found (`conversations.info` for an id, the
channel list for a name), or failed naming Slack's `ok: false` answer (`channel_not_found`,
`missing_scope` with the scopes it needs)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from clarion.cli.app import app
from tests.slack.conftest import slack_config
from tests.slack.fake_slack import BOT_TOKEN, CHANNEL_ID, SIGNING_SECRET, FakeSlack


def _doctor(config: Path, tmp_path: Path, token: str = BOT_TOKEN) -> tuple[int, str]:
    env = {
        "COLUMNS": "250",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "CLARION_CONFIG": "",
        "SLACK_BOT_TOKEN": token,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
    }
    url = f"sqlite:///{tmp_path / 'c.db'}"
    result = CliRunner().invoke(
        app, ["doctor", "--config", str(config), "--database", url, "--bus", "memory"], env=env
    )
    return result.exit_code, result.stdout


def _row(out: str, name: str = "slack slack:default") -> str:
    return next(line for line in out.splitlines() if f" {name} " in line)


def _channel_row(out: str, key: str = "slack:default") -> str:
    return _row(out, f"slack channel {key}")


def _config_with_channel(tmp_path: Path, slack: FakeSlack, channel: str, extra: str = "") -> Path:
    config = slack_config(tmp_path, slack, extra)
    config.write_text(config.read_text().replace(f'"{CHANNEL_ID}"', f'"{channel}"', 1))
    return config


def test_doctor_passes_a_valid_bot_token_with_auth_test_and_finds_the_channel(
    tmp_path: Path, slack: FakeSlack
) -> None:
    _, out = _doctor(slack_config(tmp_path, slack), tmp_path)
    assert " ok" in _row(out) and "Test team" in _row(out), out
    assert " ok" in _channel_row(out) and "#questions" in _channel_row(out), out
    assert [c.method for c in slack.calls] == ["auth.test", "conversations.info"]
    assert slack.of("conversations.info")[0].args["channel"] == CHANNEL_ID


def test_doctor_fails_an_invalid_token_naming_slacks_error(
    tmp_path: Path, slack: FakeSlack
) -> None:
    code, out = _doctor(slack_config(tmp_path, slack), tmp_path, "xoxb-revoked")
    assert code == 1
    assert "FAIL" in _row(out) and "invalid_auth" in _row(out), out
    assert "FAIL" in _channel_row(out) and "not checked" in _channel_row(out), out
    assert slack.of("conversations.info") == []


def test_doctor_fails_a_channel_slack_does_not_know_naming_channel_not_found(
    tmp_path: Path, slack: FakeSlack
) -> None:
    _, out = _doctor(_config_with_channel(tmp_path, slack, "C0GONE1234"), tmp_path)
    assert " ok" in _row(out), out  # the token itself is fine
    assert "FAIL" in _channel_row(out) and "channel_not_found" in _channel_row(out), out


def test_doctor_checks_every_configured_channel_each_on_its_own_row(
    tmp_path: Path, slack: FakeSlack
) -> None:
    extra = '\n[workspaces.ops.notifications.slack]\nchannel = "C0NOSUCH99"\n'
    _, out = _doctor(slack_config(tmp_path, slack, extra), tmp_path)
    assert " ok" in _channel_row(out), out
    ops = _channel_row(out, "slack:workspace:ops")
    assert "FAIL" in ops and "channel_not_found" in ops, out


def test_doctor_finds_a_channel_named_by_name_and_fails_a_name_it_cannot_see(
    tmp_path: Path, slack: FakeSlack
) -> None:
    _, out = _doctor(_config_with_channel(tmp_path, slack, "#questions"), tmp_path)
    assert " ok" in _channel_row(out) and CHANNEL_ID in _channel_row(out), out
    assert slack.of("conversations.info") == [] and slack.of("conversations.list")
    _, out = _doctor(_config_with_channel(tmp_path, slack, "elsewhere"), tmp_path)
    assert "FAIL" in _channel_row(out) and "channel_not_found" in _channel_row(out), out


def test_doctor_names_the_scopes_a_channel_lookup_is_missing(
    tmp_path: Path, slack: FakeSlack
) -> None:
    slack.fail["conversations.info"] = "missing_scope"
    _, out = _doctor(slack_config(tmp_path, slack), tmp_path)
    row = _channel_row(out)
    assert "FAIL" in row and "missing_scope" in row and "channels:read" in row, out
