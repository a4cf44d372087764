"""Slack's side of a question, as data: what the outbox stores for a Slack channel, the message
and interaction records, what each button carries, the respond body a click or a modal makes,
and the words of a closed question's outcome. Pure; the Block Kit layout is built from these
by `clarion.slack.blocks`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from clarion.domain.bundles import questions_of
from clarion.domain.models import Bundle, BundleState, ClarificationResponse
from clarion.domain.notification_events import NotificationFact, headline_of

# action_id prefixes of the elements Clarion posts (the suffix keeps them unique in a block).
OPTION_ACTION = "clarion_option"
SKIP_ACTION = "clarion_skip"
OPEN_ACTION = "clarion_open"
MODAL_CALLBACK = "clarion_answer"
# Within the modal: one options and one text element per question.
MODAL_OPTIONS = "options"
MODAL_TEXT = "text"


@dataclass(frozen=True, slots=True)
class SlackTarget:
    """Where one workspace's Slack notifications go, as the outbox needs it: the channel's
    key (the outbox row's destination) and the events it wants."""

    key: str
    events: frozenset[str]


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """The message a question was posted as: where it is, so replies thread under it and the
    outcome replaces its buttons."""

    pending_id: str
    channel_key: str
    channel: str
    ts: str
    task_id: str
    session_id: str
    posted_at: datetime
    body: str = "{}"  # what it was built from (`slack_body`)
    closed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SlackInteraction:
    """One click or modal submission, queued durably before Slack is acknowledged. `id` is
    its dedupe key: Slack's retries of the same request carry the same one."""

    id: str
    pending_id: str
    slack_user: str
    user: str | None
    channel: str | None
    message_ts: str | None
    body: str  # the respond body, JSON
    attempts: int = 0
    done_at: datetime | None = None
    outcome: str | None = None


def slack_body(
    fact: NotificationFact,
    *,
    link: str,
    answer_url: str | None,
    context: str,
    decision_url: str | None = None,
) -> str:
    """What an outbox row for a Slack channel stores: everything the message is built from,
    fixed when the event was queued."""
    return json.dumps(
        {
            "event": fact.event,
            "task": {"id": fact.task_id, "title": fact.task_title},
            "session_id": fact.session_id,
            "pending_id": fact.pending_id,
            "questions": [dict(q) for q in fact.questions or ()],
            "context": context,
            "detail": fact.detail,
            "link": link,
            "answer_url": answer_url,
            "decision_url": decision_url,
            "text": headline_of(fact),
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def button_value(
    pending_id: str, question_id: str | None = None, option_id: str | None = None
) -> str:
    value: dict[str, str] = {"p": pending_id}
    if question_id is not None and option_id is not None:
        value.update(q=question_id, o=option_id)
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Click:
    """A decoded button: which bundle, and for an option button the answer it gives."""

    kind: str  # OPTION_ACTION, SKIP_ACTION or OPEN_ACTION
    pending_id: str
    question_id: str | None = None
    option_id: str | None = None


def click_of(action: Mapping[str, Any]) -> Click | None:
    """The button an action names, or None for anything Clarion did not post."""
    action_id = str(action.get("action_id") or "")
    kind = next(
        (k for k in (OPTION_ACTION, SKIP_ACTION, OPEN_ACTION) if action_id.startswith(k)), None
    )
    if kind is None:
        return None
    try:
        value = json.loads(str(action.get("value") or ""))
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("p"), str) or not value["p"]:
        return None
    if kind == OPTION_ACTION:
        q, o = value.get("q"), value.get("o")
        if not isinstance(q, str) or not isinstance(o, str):
            return None
        return Click(kind, value["p"], q, o)
    return Click(kind, value["p"])


def click_body(click: Click, who: str) -> dict[str, Any]:
    """The respond body a button gives: one option of the single question, or Skip."""
    if click.kind == SKIP_ACTION:
        return {"rejected": True, "reject_reason": f"Skipped in Slack by {who}"}
    return {
        "answers": [
            {"question_id": click.question_id, "selected_options": [click.option_id]},
        ]
    }


def modal_body(
    question_ids: Sequence[str], values: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The respond body of a submitted modal (its `view.state.values`), and the errors to
    show in the modal by block id (empty when it may be sent): each question needs an option
    or some text."""
    answers: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for index, question_id in enumerate(question_ids):
        chosen = _chosen(values.get(options_block(index), {}).get(MODAL_OPTIONS))
        text_value = values.get(text_block(index), {}).get(MODAL_TEXT) or {}
        text = str(text_value.get("value") or "").strip() if isinstance(text_value, dict) else ""
        if not chosen and not text:
            errors[text_block(index)] = "Choose an option or write an answer."
        answers.append(
            {"question_id": question_id, "selected_options": chosen, "custom_text": text}
        )
    return {"answers": answers}, errors


def _chosen(element: Any) -> list[str]:
    if not isinstance(element, dict):
        return []
    one = element.get("selected_option")
    many = element.get("selected_options")
    picked = [one] if isinstance(one, dict) else many if isinstance(many, list) else []
    return [str(o.get("value")) for o in picked if isinstance(o, dict) and o.get("value")]


def options_block(index: int) -> str:
    return f"q{index}_options"


def text_block(index: int) -> str:
    return f"q{index}_text"


def outcome_line(
    bundle: Bundle, state: BundleState, response: ClarificationResponse | None, by: str | None
) -> str:
    """What replaces the buttons once the bundle left the active states; `by` names who
    answered (None: someone outside Slack)."""
    who = f" by {by}" if by else " in Clarion"
    if response is not None:
        if response.rejected:
            reason = f": {response.reject_reason}" if response.reject_reason else ""
            return f"Skipped{who}{reason}"
        labels = _labels(bundle, response)
        return f"Answered{who}: {labels}" if labels else f"Answered{who}"
    if state is BundleState.SUPERSEDED_HISTORY:
        return "No longer asked: the agent moved on"
    return "Closed without an answer (cancelled or the session ended)"


def _labels(bundle: Bundle, response: ClarificationResponse) -> str:
    by_question = {q.id: q for q in questions_of(bundle)}
    parts: list[str] = []
    for answer in response.answers:
        question = by_question.get(answer.question_id)
        names = {o.option_id: o.label for o in (question.options if question else ())}
        chosen = [names.get(o, o) for o in answer.selected_options]
        if answer.custom_text:
            chosen.append(f"“{answer.custom_text}”")
        parts.append(", ".join(chosen))
    return "; ".join(p for p in parts if p)
