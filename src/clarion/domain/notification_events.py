"""Notification events: their names, what the transaction that caused one saw of it (the
fact every channel's message is built from), its headline in words, the link to its session,
whether it carries an answer or decision link, and how long a failed delivery waits. Pure;
the store builds each channel's message with it inside the transaction that caused the event
(webhooks.py: the webhook's body and signature; emails.py; slack.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from clarion.domain.bundles import question_of
from clarion.domain.models import Message, MetaKey
from clarion.domain.questions import question_wire

CLARIFICATION_REQUESTED = "clarification.requested"
CLARIFICATION_DETACHED = "clarification.detached"
CLARIFICATION_ANSWERED = "clarification.answered"
PERMISSION_REQUESTED = "permission.requested"
PERMISSION_DECIDED = "permission.decided"
SESSION_FAILED = "session.failed"
CLARIFICATION_REMINDER = "clarification.reminder"
CLARIFICATION_ESCALATED = "clarification.escalated"
CLARIFICATION_EXPIRED = "clarification.expired"
EVENTS = (
    CLARIFICATION_REQUESTED,
    CLARIFICATION_DETACHED,
    CLARIFICATION_ANSWERED,
    PERMISSION_REQUESTED,
    PERMISSION_DECIDED,
    SESSION_FAILED,
    CLARIFICATION_REMINDER,
    CLARIFICATION_ESCALATED,
    CLARIFICATION_EXPIRED,
)


@dataclass(frozen=True, slots=True)
class NotificationFact:
    """What happened, as the transaction that caused it saw it."""

    event: str
    task_id: str
    task_title: str
    session_id: str
    pending_id: str | None = None
    message_id: str | None = None
    questions: tuple[Mapping[str, Any], ...] | None = None
    tool_call: Mapping[str, Any] | None = None
    # Words for the readable line only (the body keeps the contract's fields): how a question
    # was answered (`answered`/`skipped`), a permission's new status, a failure's error.
    detail: str = ""
    # The agent's context for its questions (a Slack message shows it; webhooks do not).
    context: str = ""
    # For emails only (the webhook body keeps the contract's fields): the response that closed
    # the question (`response_wire`'s shape), and whether a server restart detached it.
    response: Mapping[str, Any] | None = None
    after_restart: bool = False
    # An open question's deadline under its waiting policy, and what happens then.
    expires_at: datetime | None = None
    on_expiry: str = ""


def questions_of_rows(rows: Sequence[Message]) -> tuple[dict[str, Any], ...]:
    """A bundle's questions (question order) in the shape `GET /clarification/{id}` shows."""
    ordered = sorted(rows, key=lambda m: (_index(m), m.created_at, m.id))
    return tuple(question_wire(question_of(row)) for row in ordered)


def _index(message: Message) -> int:
    value = message.metadata.get(MetaKey.QUESTION_INDEX)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def link_for(base_url: str, task_id: str, session_id: str) -> str:
    """The web UI address that opens the session holding the item."""
    return f"{base_url.rstrip('/')}/#/tasks/{quote(task_id)}/sessions/{quote(session_id)}"


def _first_question(fact: NotificationFact) -> str:
    for question in fact.questions or ():
        text = str(question.get("prompt") or question.get("title") or "")
        if text:
            return text
    return "a question"


def _tool(fact: NotificationFact) -> str:
    call = fact.tool_call or {}
    return str(call.get("title") or call.get("kind") or "a tool call")


def headline_of(fact: NotificationFact) -> str:
    """What happened, in one line of words naming the task (no link)."""
    where = fact.task_title or fact.task_id
    lines = {
        CLARIFICATION_REQUESTED: f"Agent asks in {where}: {_first_question(fact)}",
        CLARIFICATION_DETACHED: (
            f"Agent stopped waiting in {where}; the question is still open: {_first_question(fact)}"
        ),
        CLARIFICATION_ANSWERED: (
            f"{'Skipped' if fact.detail == 'skipped' else 'Answered'} in {where}:"
            f" {_first_question(fact)}"
        ),
        PERMISSION_REQUESTED: f"Agent asks permission in {where}: {_tool(fact)}",
        PERMISSION_DECIDED: f"Permission {fact.detail or 'decided'} in {where}: {_tool(fact)}",
        SESSION_FAILED: f"Session failed in {where}: {fact.detail or 'the agent failed'}",
        CLARIFICATION_REMINDER: f"Still waiting for an answer in {where}: {_first_question(fact)}",
        CLARIFICATION_ESCALATED: (
            f"Escalated to {fact.detail or 'more people'} in {where}: {_first_question(fact)}"
        ),
        CLARIFICATION_EXPIRED: (
            f"No answer in time in {where} ({fact.detail or 'expired'}): {_first_question(fact)}"
        ),
    }
    return " ".join(lines.get(fact.event, f"{fact.event} in {where}").split())


# Clarification events after which the bundle can no longer be answered: no answer link.
_CLOSED = frozenset({CLARIFICATION_ANSWERED, CLARIFICATION_EXPIRED})


def wants_answer_url(fact: NotificationFact) -> bool:
    """Whether the event's body carries the bundle's answer link (its question is open)."""
    return (
        fact.pending_id is not None
        and fact.event.startswith("clarification.")
        and fact.event not in _CLOSED
    )


def wants_decision_url(fact: NotificationFact) -> bool:
    """Whether the event's body carries the permission request's decision link (the event
    that asks it; once decided there is nothing left to decide)."""
    return fact.message_id is not None and fact.event == PERMISSION_REQUESTED


def retry_delay(attempts: int, base_s: float, cap_s: float = 300.0) -> float:
    """Seconds before the next attempt after `attempts` failed ones: doubling from `base_s`."""
    return float(min(cap_s, base_s * (2 ** max(0, attempts - 1))))
