"""Socket Mode, for servers Slack cannot reach (behind a firewall): slack-sdk's Socket Mode
client opens a WebSocket to Slack with the app-level token (`app_token_env`) and Slack sends
the interactions over it instead of to `POST /api/v1/slack/interactions`.

The handling is the HTTP route's: each `interactive` envelope goes to the same inbox, which
queues it durably, and only then is the envelope acknowledged (with a modal's validation
errors as its payload); what follows the acknowledgement (answering, opening the modal, an
ephemeral message) runs on the event loop afterwards. An envelope whose handling failed is not
acknowledged, so Slack sends it again. The Web Socket is Slack's own credential: no signature.

slack-sdk's built-in client runs its own threads; each envelope is handed to the event loop
and its listener thread waits for the acknowledgement (Slack wants it within 3 seconds).
"""

from __future__ import annotations

import asyncio
import logging

from slack_sdk import WebClient
from slack_sdk.socket_mode.builtin.client import SocketModeClient
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from clarion.config.slack import SlackChannel
from clarion.slack.inbox import SlackInbox

log = logging.getLogger(__name__)

ACK_S = 2.5  # Slack wants an envelope acknowledged within 3 seconds


class SocketModeReceiver:
    def __init__(
        self, channel: SlackChannel, inbox: SlackInbox, loop: asyncio.AbstractEventLoop
    ) -> None:
        assert channel.app_token is not None
        self._key = channel.key
        self._inbox = inbox
        self._loop = loop
        web = WebClient(token=channel.token, base_url=channel.api_url)
        self._client = SocketModeClient(
            app_token=channel.app_token, web_client=web, logger=log, auto_reconnect_enabled=True
        )
        self._client.socket_mode_request_listeners.append(self._on_request)

    def connect(self) -> None:
        """Open the connection (blocking: run it in a worker thread)."""
        self._client.connect()
        log.info("slack socket mode connected", extra={"channel_key": self._key})

    def close(self) -> None:
        self._client.close()

    def _on_request(self, client: BaseSocketModeClient, request: SocketModeRequest) -> None:
        if request.type != "interactive":
            client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
            log.info("slack socket mode envelope ignored", extra={"type": request.type})
            return
        pending = asyncio.run_coroutine_threadsafe(
            self._inbox.receive(request.payload, retry=str(request.retry_attempt or "") or None),
            self._loop,
        )
        try:
            ack = pending.result(timeout=ACK_S)
        except Exception as exc:  # not acknowledged: Slack sends the envelope again
            log.warning(
                "slack socket mode envelope not handled; Slack will send it again",
                extra={"envelope_id": request.envelope_id, "error": str(exc)[:300]},
            )
            return
        client.send_socket_mode_response(
            SocketModeResponse(envelope_id=request.envelope_id, payload=ack.body)
        )
        follow_up = ack.after
        if follow_up is not None:

            async def after() -> None:
                await follow_up()

            asyncio.run_coroutine_threadsafe(after(), self._loop)
