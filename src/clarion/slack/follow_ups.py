"""What the inbox does in Slack once Slack got its 200: tell a refused person why (an
ephemeral message), or open the modal of every question (`views.open`, with the trigger the
click carried). Both are best effort: a failure is logged, and nothing was written that
depends on them."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from clarion.domain.bundles import questions_of
from clarion.domain.models import Bundle
from clarion.domain.questions import question_wire
from clarion.ports.slack import SlackStore
from clarion.slack.blocks import answer_modal, modal_metadata
from clarion.slack.client import SlackApi

log = logging.getLogger(__name__)


class FollowUps:
    def __init__(
        self, store: SlackStore, api_for: Callable[[str], Awaitable[SlackApi | None]]
    ) -> None:
        self._store = store
        self._api_for = api_for

    async def tell(self, pending_id: str, channel: str, slack_user: str, text: str) -> None:
        api = await self._api_for(pending_id)
        if api is None or not channel:
            return
        try:
            await api.post_ephemeral(channel, slack_user, text)
        except Exception as exc:
            log.warning("slack ephemeral message failed", extra={"error": str(exc)[:300]})

    async def open_modal(self, bundle: Bundle, trigger: str, channel: str, ts: str) -> None:
        api = await self._api_for(bundle.pending_id)
        if api is None or not trigger:
            return
        message = await self._store.find_slack_message(bundle.pending_id)
        body: dict[str, Any] = json.loads(message.body) if message is not None else {}
        body["questions"] = [question_wire(q) for q in questions_of(bundle)]
        body.setdefault("task", {"id": bundle.session.task_id, "title": ""})
        body["pending_id"] = bundle.pending_id
        view = answer_modal(body, modal_metadata(bundle.pending_id, channel or None, ts or None))
        try:
            await api.open_view(trigger, view)
        except Exception as exc:
            log.warning(
                "slack modal not opened",
                extra={"pending_id": bundle.pending_id, "error": str(exc)[:300]},
            )
