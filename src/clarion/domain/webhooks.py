"""Outgoing webhooks: the body each webhook delivery carries, its readable line, its headers
and its signature. Pure; the store builds bodies with it inside the transaction that caused
the event (from notification_events.py's fact), and the deliverer signs what the store kept.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from clarion.domain.notification_events import NotificationFact, headline_of, link_for

EVENT_HEADER = "X-Clarion-Event"
DELIVERY_HEADER = "X-Clarion-Delivery"
SIGNATURE_HEADER = "X-Clarion-Signature"


def text_of(
    fact: NotificationFact,
    link: str,
    answer_url: str | None = None,
    decision_url: str | None = None,
) -> str:
    """One readable line (what a chat's incoming webhook shows), ending with the link; a
    question still open also names its answer link, a permission request its decision link."""
    line = headline_of(fact)
    if answer_url:
        return f"{line} Answer: {answer_url} Open: {link}"
    if decision_url:
        return f"{line} Decide: {decision_url} Open: {link}"
    return f"{line} {link}"


def webhook_body(
    fact: NotificationFact,
    *,
    delivery_id: str,
    occurred_at: datetime,
    base_url: str,
    answer_url: str | None = None,
    decision_url: str | None = None,
) -> dict[str, Any]:
    """The delivery's body; `answer_url`, when given, is the question's answer link, and
    `decision_url` the permission request's decision link."""
    link = link_for(base_url, fact.task_id, fact.session_id)
    body: dict[str, Any] = {
        "event": fact.event,
        "delivery_id": delivery_id,
        "occurred_at": occurred_at.isoformat(),
        "task": {"id": fact.task_id, "title": fact.task_title},
        "session_id": fact.session_id,
    }
    if fact.pending_id is not None:
        body["pending_id"] = fact.pending_id
    if fact.message_id is not None:
        body["message_id"] = fact.message_id
    if fact.questions is not None:
        body["questions"] = [dict(q) for q in fact.questions]
    if fact.tool_call is not None:
        body["tool_call"] = dict(fact.tool_call)
    body["link"] = link
    if answer_url is not None:
        body["answer_url"] = answer_url
    if decision_url is not None:
        body["decision_url"] = decision_url
    body["text"] = text_of(fact, link, answer_url, decision_url)
    return body


def encode_body(body: Mapping[str, Any]) -> str:
    """The exact text sent (and signed); stored once so every retry sends the same bytes."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def signature(secret: str, raw_body: bytes) -> str:
    """`X-Clarion-Signature`: sha256=<hex HMAC-SHA256 of the raw body with the secret>."""
    digest = hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"
