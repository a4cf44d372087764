"""Slack's interactions as they arrive (`POST /api/v1/slack/interactions`, or a Socket Mode
envelope): verified, checked, queued durably, acknowledged.

Nothing here answers a question: a verified click or modal submission is written to the
durable queue (its id is its dedupe key, so Slack's retries and a repeated delivery insert
one row) and the answerer takes it from there, after Slack got its 200. Slack wants that 200
within 3 seconds; an answer to a detached question may wait longer for the agent.

Refused and nothing written: a bad or missing signature, or one more than 5 minutes off (401
over HTTP); with access control on, a Slack user refusals.py refuses (told so in an ephemeral
message, follow_ups.py). Acknowledged with 200 and nothing written, with a log line: a payload
that is not JSON, of a type Clarion does not handle, or naming a question Clarion does not know.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier

from clarion.config.slack import SlackSettings
from clarion.domain.answers import validate_response
from clarion.domain.bundles import questions_of
from clarion.domain.errors import InvalidInput
from clarion.domain.models import Bundle
from clarion.domain.slack import (
    MODAL_CALLBACK,
    OPEN_ACTION,
    SlackInteraction,
    click_body,
    click_of,
    modal_body,
    text_block,
)
from clarion.orchestrator.access import AccessControl
from clarion.ports.slack import SlackStore
from clarion.slack.client import SlackApi
from clarion.slack.closer import Bundles
from clarion.slack.follow_ups import FollowUps
from clarion.slack.refusals import Refusals

log = logging.getLogger(__name__)

TIMESTAMP_HEADER = "x-slack-request-timestamp"
SIGNATURE_HEADER = "x-slack-signature"


@dataclass(frozen=True, slots=True)
class Ack:
    """What Slack gets back: a status, an optional JSON body (a modal's validation errors),
    and what to do once it is sent (wake the answerer, open the modal, tell the person)."""

    status: int = 200
    body: dict[str, Any] | None = None
    after: Callable[[], Awaitable[None]] | None = None


def _dedupe_key(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:64]


class SlackInbox:
    def __init__(
        self,
        settings: SlackSettings,
        store: SlackStore,
        bundles: Bundles,
        access: AccessControl,
        api_for: Callable[[str], Awaitable[SlackApi | None]],
        queued: Callable[[SlackInteraction, Bundle], Awaitable[None]],
    ) -> None:
        self._store = store
        self._bundles = bundles
        self._refusals = Refusals(settings.users, store, access)
        self._follow_ups = FollowUps(store, api_for)
        # After the 200: wake this replica's answerer and tell the others (wakeups.py).
        self._queued = queued
        secrets = dict.fromkeys(c.signing_secret for c in settings.channels())
        self._verifiers = [SignatureVerifier(secret) for secret in secrets]

    def verified(self, raw: bytes, headers: Mapping[str, str]) -> bool:
        """Slack's `v0` signature with any configured app's signing secret, its timestamp at
        most 5 minutes off."""
        timestamp = headers.get(TIMESTAMP_HEADER)
        signature = headers.get(SIGNATURE_HEADER)
        if not timestamp or not signature or not timestamp.strip().isdigit():
            return False
        return any(v.is_valid(raw, timestamp, signature) for v in self._verifiers)

    async def receive_http(self, raw: bytes, headers: Mapping[str, str]) -> Ack:
        if not self.verified(raw, headers):
            log.warning(
                "slack interaction refused: bad signature",
                extra={"retry_num": headers.get("x-slack-retry-num")},
            )
            return Ack(status=401)
        form = parse_qs(raw.decode("utf-8", "replace"))
        raw_payload = (form.get("payload") or [""])[0]
        try:
            payload = json.loads(raw_payload)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            log.warning("slack interaction ignored: its payload is not a JSON object")
            return Ack()
        return await self.receive(payload, retry=headers.get("x-slack-retry-num"))

    async def receive(self, payload: Mapping[str, Any], retry: str | None = None) -> Ack:
        """A verified payload (HTTP or Socket Mode)."""
        kind = payload.get("type")
        if kind == "block_actions":
            return await self._action(payload, retry)
        if kind == "view_submission":
            return await self._submission(payload, retry)
        log.info("slack interaction ignored: unknown type", extra={"type": str(kind)[:64]})
        return Ack()

    async def _action(self, payload: Mapping[str, Any], retry: str | None) -> Ack:
        actions = payload.get("actions")
        action = actions[0] if isinstance(actions, list) and actions else None
        click = click_of(action) if isinstance(action, dict) else None
        if click is None:
            log.info("slack interaction ignored: not a Clarion button")
            return Ack()
        bundle = await self._bundles.find_bundle(click.pending_id)
        if bundle is None:
            log.info(
                "slack interaction ignored: unknown question",
                extra={"pending_id": click.pending_id[:200]},
            )
            return Ack()
        slack_user = str((payload.get("user") or {}).get("id") or "")
        container = payload.get("container") or {}
        channel = str((payload.get("channel") or {}).get("id") or container.get("channel_id") or "")
        ts = str(container.get("message_ts") or (payload.get("message") or {}).get("ts") or "")
        user = self._refusals.user_of(slack_user)
        refusal = await self._refusals.refusal(slack_user, bundle)
        if refusal is not None:
            tell = self._follow_ups.tell
            return Ack(after=lambda: tell(click.pending_id, channel, slack_user, refusal))
        if click.kind == OPEN_ACTION:
            trigger = str(payload.get("trigger_id") or "")
            return Ack(after=lambda: self._follow_ups.open_modal(bundle, trigger, channel, ts))
        action_ts = str((action or {}).get("action_ts") or "")
        key = _dedupe_key(
            "action", click.pending_id, slack_user, payload.get("trigger_id"), action_ts
        )
        body = click_body(click, user or slack_user)
        interaction = _interaction(key, click.pending_id, slack_user, user, channel, ts, body)
        return await self._queue(interaction, bundle, click.kind, retry)

    async def _queue(
        self, interaction: SlackInteraction, bundle: Bundle, kind: str, retry: str | None
    ) -> Ack:
        queued = await self._store.queue_slack_interaction(interaction)
        log.info(
            "slack interaction queued" if queued else "slack interaction already queued",
            extra={
                "interaction_id": interaction.id,
                "pending_id": interaction.pending_id,
                "slack_user": interaction.slack_user,
                "user": interaction.user,
                "kind": kind,
                "retry_num": retry,
            },
        )
        return Ack(after=lambda: self._queued(interaction, bundle))

    async def _submission(self, payload: Mapping[str, Any], retry: str | None) -> Ack:
        view = payload.get("view") or {}
        if view.get("callback_id") != MODAL_CALLBACK:
            log.info("slack interaction ignored: not a Clarion modal")
            return Ack()
        try:
            meta = json.loads(str(view.get("private_metadata") or ""))
            pending_id = str(meta["p"])
        except (ValueError, KeyError, TypeError):
            log.info("slack interaction ignored: the modal names no question")
            return Ack()
        bundle = await self._bundles.find_bundle(pending_id)
        if bundle is None:
            log.info(
                "slack interaction ignored: unknown question",
                extra={"pending_id": pending_id[:200]},
            )
            return Ack()
        slack_user = str((payload.get("user") or {}).get("id") or "")
        user = self._refusals.user_of(slack_user)
        refusal = await self._refusals.refusal(slack_user, bundle)
        if refusal is not None:
            return _modal_errors({text_block(0): refusal})
        questions = questions_of(bundle)
        values = (view.get("state") or {}).get("values") or {}
        body, errors = modal_body([q.id for q in questions], values)
        if errors:
            return _modal_errors(errors)
        try:
            validate_response(body, questions, pending_id)
        except InvalidInput as exc:
            return _modal_errors({text_block(_question_index(exc.field)): exc.message})
        key = _dedupe_key("view", pending_id, slack_user, view.get("id"), view.get("hash"))
        channel, ts = str(meta.get("c") or ""), str(meta.get("ts") or "")
        interaction = _interaction(key, pending_id, slack_user, user, channel, ts, body)
        return await self._queue(interaction, bundle, "view", retry)


def _interaction(
    key: str,
    pending_id: str,
    slack_user: str,
    user: str | None,
    channel: str,
    ts: str,
    body: Mapping[str, Any],
) -> SlackInteraction:
    return SlackInteraction(
        id=key,
        pending_id=pending_id,
        slack_user=slack_user,
        user=user,
        channel=channel or None,
        message_ts=ts or None,
        body=json.dumps(body, separators=(",", ":")),
    )


def _modal_errors(errors: Mapping[str, str]) -> Ack:
    return Ack(body={"response_action": "errors", "errors": dict(errors)})


def _question_index(field: str | None) -> int:
    """`answers[2].custom_text` -> 2; 0 when the field names no question."""
    if field and field.startswith("answers["):
        number = field[len("answers[") :].split("]", 1)[0]
        if number.isdigit():
            return int(number)
    return 0
