"""A running `clarion serve` with `[notifications.slack]` pointed at a fake Slack on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.harness import ServerProcess
from tests.slack.fake_slack import BOT_TOKEN, CHANNEL_ID, SIGNING_SECRET, FakeSlack, fake_slack

SLACK_ENV = {
    "SLACK_BOT_TOKEN": BOT_TOKEN,
    "SLACK_SIGNING_SECRET": SIGNING_SECRET,
    "CLARION_WEBHOOK_BACKOFF_S": "0.1",
    "CLARION_WEBHOOK_MAX_DELAY_S": "0.5",
    "CLARION_SLACK_SWEEP_S": "0.3",
    "CLARION_CLARIFICATION_WAIT_S": "600",
    "CLARION_NO_SAMPLE": "1",
}


def slack_config(path: Path, slack: FakeSlack, extra: str = "") -> Path:
    config = path / "clarion.toml"
    config.write_text(
        "[notifications.slack]\n"
        'bot_token_env = "SLACK_BOT_TOKEN"\n'
        'signing_secret_env = "SLACK_SIGNING_SECRET"\n'
        f'channel = "{CHANNEL_ID}"\n'
        f'api_url = "{slack.api_url}"\n'
        "\n[slack.users]\n"
        'U0ALICE = "alice"\n'
        'U0BOB = "bob"\n' + extra
    )
    return config


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with fake_slack() as fake:
        yield fake


def new_server(
    tmp_path: Path,
    slack: FakeSlack,
    *,
    database_url: str | None = None,
    extra: str = "",
    args: list[str] | None = None,
    **env: str,
) -> ServerProcess:
    workdir = tmp_path / "server"
    workdir.mkdir(exist_ok=True)
    return ServerProcess(
        database_url=database_url or f"sqlite:///{tmp_path / 'clarion.db'}",
        workdir=workdir,
        env={**SLACK_ENV, "CLARION_CONFIG": str(slack_config(tmp_path, slack, extra)), **env},
        args=args or [],
    )


@pytest.fixture
def server(tmp_path: Path, slack: FakeSlack) -> Iterator[ServerProcess]:
    process = new_server(tmp_path, slack)
    try:
        process.start()
        yield process
    finally:
        process.stop()


def post_interaction(server: ServerProcess, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(
        f"{server.url}/api/v1/slack/interactions", content=body, headers=headers, timeout=30
    )
