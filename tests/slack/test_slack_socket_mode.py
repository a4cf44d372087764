"""Socket Mode (`app_token_env`), end to end: a real `clarion serve` opens slack-sdk's Socket
Mode connection to a local WebSocket stand-in, and clicks and modal submissions sent over it
are acknowledged after they were queued and answered exactly as over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.slack.conftest import new_server
from tests.slack.fake_slack import FakeSlack, click, option_action
from tests.slack.socket_mode_stand_in import socket_mode_stand_in

pytestmark = pytest.mark.e2e


def test_a_click_over_socket_mode_is_acknowledged_and_answers_once(
    tmp_path: Path, slack: FakeSlack
) -> None:
    with socket_mode_stand_in() as socket:
        slack.socket_url = socket.url
        server = new_server(tmp_path, slack, SLACK_APP_TOKEN="xapp-test")
        config = Path(server.env["CLARION_CONFIG"])
        config.write_text(
            config.read_text().replace(
                "[notifications.slack]\n",
                '[notifications.slack]\napp_token_env = "SLACK_APP_TOKEN"\n',
            )
        )
        try:
            server.start()
            socket.wait_connected()
            [opened] = slack.of("apps.connections.open")
            assert opened.token == "xapp-test"
            session_id = server.start_session(server.create_task("Billing"), "/scenario ask")
            pending_id = server.wait_for_bundle(session_id)
            [posted] = slack.wait_for("chat.postMessage")
            payload = click(posted, option_action(posted, "sqlite"))
            socket.send_interactive("env-1", payload)
            socket.send_interactive("env-1", payload, retry=1)  # Slack's retry of the same one
            assert socket.wait_ack("env-1")["envelope_id"] == "env-1"
            server.wait_for_state(pending_id, "terminal")
            [update] = slack.wait_for("chat.update")
            winner = server.respond(pending_id, {"rejected": True}).json()["error"]["response"]
        finally:
            server.stop()
    assert "Answered by alice" in json.dumps(update.args["blocks"])
    assert winner["answers"][0]["selected_options"] == ["sqlite"]
    assert len(slack.of("chat.update")) == 1
