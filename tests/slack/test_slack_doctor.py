"""`clarion doctor` checks each Slack channel's bot token with Slack's `auth.test`: ok with the
team and bot named, or failed naming Slack's error (`invalid_auth`)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from clarion.cli.app import app
from tests.slack.conftest import slack_config
from tests.slack.fake_slack import BOT_TOKEN, SIGNING_SECRET, FakeSlack


def _doctor(config: Path, tmp_path: Path, token: str) -> tuple[int, str]:
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


def _row(out: str) -> str:
    return next(line for line in out.splitlines() if "slack slack:default" in line)


def test_doctor_passes_a_valid_bot_token_with_auth_test(tmp_path: Path, slack: FakeSlack) -> None:
    _, out = _doctor(slack_config(tmp_path, slack), tmp_path, BOT_TOKEN)
    row = _row(out)
    assert " ok" in row and "Test team" in row, out
    assert [c.method for c in slack.calls] == ["auth.test"]


def test_doctor_fails_an_invalid_token_naming_slacks_error(
    tmp_path: Path, slack: FakeSlack
) -> None:
    code, out = _doctor(slack_config(tmp_path, slack), tmp_path, "xoxb-revoked")
    assert code == 1
    assert "FAIL" in _row(out) and "invalid_auth" in _row(out), out
