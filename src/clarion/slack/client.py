"""Slack's Web API, one method per call Clarion makes, through slack-sdk's `WebClient` (its own
HTTP and retry of a dropped connection) in a worker thread, so the event loop never waits on
Slack. An answer with `ok: false` raises slack-sdk's `SlackApiError`, naming Slack's error
(`channel_not_found`, `invalid_auth`), which the caller treats as a failed attempt."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.views import View

from clarion.config.slack import SlackChannel

TIMEOUT_S = 4  # per try; slack-sdk tries a dropped connection once more
# A channel id (`C0123ABC`, a private one's `G...`, a direct message's `D...`); anything else
# in the config is a channel's name.
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{6,}")
# A name is looked for among at most this many channels (pages of 1000).
_LIST_PAGES = 10


class ChannelNotFound(Exception):
    """No channel of that name among those the bot can see."""


class SlackApi:
    """One bot's client (a channel's token and API address)."""

    def __init__(self, channel: SlackChannel, timeout_s: int = TIMEOUT_S) -> None:
        self._client = WebClient(token=channel.token, base_url=channel.api_url, timeout=timeout_s)

    async def post_message(
        self,
        channel: str,
        text: str,
        blocks: Sequence[dict[str, Any]] | None = None,
        thread_ts: str | None = None,
    ) -> tuple[str, str]:
        """`chat.postMessage`; the (channel id, ts) Slack gave the message."""
        response = await asyncio.to_thread(
            self._client.chat_postMessage,
            channel=channel,
            text=text,
            blocks=list(blocks) if blocks is not None else None,
            thread_ts=thread_ts,
        )
        ts = response.get("ts")
        if not ts:
            raise ValueError("chat.postMessage answered without the message's ts")
        return str(response.get("channel") or channel), str(ts)

    async def update(
        self, channel: str, ts: str, text: str, blocks: Sequence[dict[str, Any]]
    ) -> None:
        await asyncio.to_thread(
            self._client.chat_update, channel=channel, ts=ts, text=text, blocks=list(blocks)
        )

    async def post_ephemeral(self, channel: str, user: str, text: str) -> None:
        await asyncio.to_thread(
            self._client.chat_postEphemeral, channel=channel, user=user, text=text
        )

    async def open_view(self, trigger_id: str, view: View) -> None:
        await asyncio.to_thread(self._client.views_open, trigger_id=trigger_id, view=view)

    async def auth_test(self) -> Mapping[str, Any]:
        response = await asyncio.to_thread(self._client.auth_test)
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def find_channel(self, channel: str) -> Mapping[str, Any]:
        """The channel as Slack describes it (`id`, `name`, `is_member`, ...): an id through
        `conversations.info`, a name (`#name` or `name`) through `conversations.list`. Needs
        the `channels:read` scope (and `groups:read` for a private channel); Slack's
        `channel_not_found` or `missing_scope` raise `SlackApiError`, a name not found
        `ChannelNotFound`."""
        if _CHANNEL_ID.fullmatch(channel):
            response = await asyncio.to_thread(self._client.conversations_info, channel=channel)
            found = response.get("channel")
            return dict(found) if isinstance(found, dict) else {}
        name, cursor = channel.removeprefix("#"), None
        for _ in range(_LIST_PAGES):
            response = await asyncio.to_thread(
                self._client.conversations_list,
                types="public_channel,private_channel",
                exclude_archived=True,
                limit=1000,
                cursor=cursor,
            )
            for candidate in response.get("channels") or ():
                if isinstance(candidate, dict) and candidate.get("name") == name:
                    return dict(candidate)
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
        raise ChannelNotFound(f"no channel named #{name} that the bot can see")


def slack_error(exc: BaseException) -> str:
    """Slack's own error name for an `ok: false` answer (`invalid_auth`), else the failure."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or exc)
    if isinstance(exc, ChannelNotFound):
        return f"channel_not_found ({exc})"
    return f"{type(exc).__name__}: {exc}"
