"""The outbox's Slack channel: what each queued event does in Slack.

- `clarification.requested` posts the question (`chat.postMessage` with its buttons) and
  records where the message is; if it was recorded already (a delivery sent again after a
  crash that came after the record), nothing is posted twice.
- reminders, escalations and a detached agent reply in the message's thread.
- `clarification.answered` and `clarification.expired` close the message (closer.py).
- any other event (permissions, a failed session) posts its readable line.

Every Slack error (`ok: false`, a timeout, a refused connection) raises, so the deliverer
records a failed attempt and retries it with backoff, like any other delivery.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from clarion.config.slack import SlackSettings
from clarion.domain.notification_events import (
    CLARIFICATION_ANSWERED,
    CLARIFICATION_DETACHED,
    CLARIFICATION_ESCALATED,
    CLARIFICATION_EXPIRED,
    CLARIFICATION_REMINDER,
    CLARIFICATION_REQUESTED,
)
from clarion.domain.slack import SlackMessage
from clarion.ports import Clock, QueuedDelivery
from clarion.ports.slack import SlackStore
from clarion.runtime import failpoints
from clarion.slack.blocks import as_dicts, esc, question_blocks
from clarion.slack.client import SlackApi
from clarion.slack.closer import SlackCloser

log = logging.getLogger(__name__)

IN_THREAD = frozenset({CLARIFICATION_REMINDER, CLARIFICATION_ESCALATED, CLARIFICATION_DETACHED})
CLOSING = frozenset({CLARIFICATION_ANSWERED, CLARIFICATION_EXPIRED})
# One attempt (a post, or a reply and its lookups), within which the client may try twice; the
# outbox lease outlasts twice this, so a delivery a dead server held is sent again after it.
TIMEOUT_S = 10.0


class NotPostedYet(Exception):
    """A thread reply for a question whose message is not posted yet: try again later."""


class SlackPoster:
    timeout_s = TIMEOUT_S

    def __init__(
        self,
        settings: SlackSettings,
        store: SlackStore,
        closer: SlackCloser,
        apis: Mapping[str, SlackApi],
        clock: Clock,
    ) -> None:
        self._settings = settings
        self._store = store
        self._closer = closer
        self._apis = apis
        self._clock = clock

    def handles(self, key: str) -> bool:
        return key in self._apis

    async def deliver(self, delivery: QueuedDelivery) -> None:
        """Send one queued delivery to Slack; raises on any failure."""
        channel = self._settings.by_key(delivery.url)
        api = self._apis[delivery.url]
        assert channel is not None
        body: dict[str, Any] = json.loads(delivery.body)
        pending_id = body.get("pending_id")
        if delivery.event == CLARIFICATION_REQUESTED and pending_id:
            await self._post_question(api, channel.channel, delivery, body, pending_id)
        elif delivery.event in CLOSING and pending_id:
            # Closed once the answer is delivered; if this process stops first, the sweep of
            # the messages still open closes it after the restart.
            self._closer.watch(pending_id)
        elif delivery.event in IN_THREAD and pending_id:
            message = await self._store.find_slack_message(pending_id)
            if message is None:
                raise NotPostedYet(f"the question {pending_id} is not posted in Slack yet")
            await api.post_message(message.channel, _line(body), thread_ts=message.ts)
        else:
            await api.post_message(channel.channel, _line(body))

    async def _post_question(
        self,
        api: SlackApi,
        channel: str,
        delivery: QueuedDelivery,
        body: dict[str, Any],
        pending_id: str,
    ) -> None:
        if await self._store.find_slack_message(pending_id) is not None:
            return  # posted by an earlier attempt that recorded it
        blocks = as_dicts(question_blocks(body))
        posted_channel, ts = await api.post_message(channel, str(body.get("text") or ""), blocks)
        await failpoints.hit("slack.after_post")
        task = body.get("task") or {}
        await self._store.record_slack_message(
            SlackMessage(
                pending_id=pending_id,
                channel_key=delivery.url,
                channel=posted_channel,
                ts=ts,
                task_id=str(task.get("id") or ""),
                session_id=str(body.get("session_id") or ""),
                posted_at=self._clock.now(),
                body=delivery.body,
            )
        )
        log.info(
            "slack question posted",
            extra={"pending_id": pending_id, "channel": posted_channel, "ts": ts},
        )
        # Answered before the message existed: the sweep closes it now.
        self._closer.wake()


def _line(body: Mapping[str, Any]) -> str:
    text = esc(str(body.get("text") or body.get("event") or ""))
    answer_url = body.get("answer_url")
    link = body.get("link")
    if answer_url:
        return f"{text} <{answer_url}|Answer>"
    decision_url = body.get("decision_url")
    if decision_url:
        return f"{text} <{decision_url}|Decide>"
    return f"{text} <{link}|Open in Clarion>" if link else text
