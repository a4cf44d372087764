"""Validate and normalize a response to a bundle; its wire, tool-result and row encodings.

Pure; the respond service, the MCP tool and the store import it. A bad body raises
`errors.InvalidInput` with code `invalid_response` and `field` naming the first bad field
(`answers[1].question_id`); nothing has been written at that point.

Rules: exactly one answer per question; question ids known and unique; every selected option
belongs to its question (several allowed); `custom_text` and `reject_reason` at most 2000
characters (code points), measured before trimming; `rejected` never with a non-empty
`answers`. An answer with no option and empty text is accepted. Normalization puts answers
in question order, deduplicates options into their question's option order, trims text, and
drops the reason of an answered response.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from clarion.domain.errors import InvalidInput
from clarion.domain.models import (
    Answer,
    ClarificationResponse,
    Question,
)

MAX_TEXT = 2000
INVALID_RESPONSE = "invalid_response"


def _fail(field: str | None, message: str) -> InvalidInput:
    text = f"{field}: {message}" if field else message
    return InvalidInput(text, field=field, code=INVALID_RESPONSE)


def _text(raw: Mapping[str, Any], key: str, path: str) -> str:
    """An optional string of at most MAX_TEXT code points, untrimmed; None reads as empty."""
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail(path, "must be a string")
    if len(value) > MAX_TEXT:
        raise _fail(path, f"must be at most {MAX_TEXT} characters")
    return value


def _selected(raw: Mapping[str, Any], path: str, question: Question) -> tuple[str, ...]:
    value = raw.get("selected_options")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(f"{path}.selected_options", "must be a list of option ids")
    known = {o.option_id for o in question.options}
    for j, option_id in enumerate(value):
        if not isinstance(option_id, str):
            raise _fail(f"{path}.selected_options[{j}]", "must be a string")
        if option_id not in known:
            raise _fail(
                f"{path}.selected_options[{j}]",
                f"unknown option {option_id!r} for question {question.id!r}",
            )
    # Deduplicated, in the question's own option order, so equivalent submissions match.
    chosen = set(value)
    return tuple(o.option_id for o in question.options if o.option_id in chosen)


def _answer(
    raw: object, i: int, by_id: Mapping[str, Question], answered: Collection[str]
) -> Answer:
    path = f"answers[{i}]"
    if not isinstance(raw, Mapping):
        raise _fail(path, "must be an object")
    question_id = raw.get("question_id")
    if question_id is None or question_id == "":
        raise _fail(f"{path}.question_id", "is required")
    if not isinstance(question_id, str):
        raise _fail(f"{path}.question_id", "must be a string")
    question = by_id.get(question_id)
    if question is None:
        raise _fail(f"{path}.question_id", f"unknown question {question_id!r}")
    if question_id in answered:
        raise _fail(f"{path}.question_id", f"question {question_id!r} answered twice")
    selected = _selected(raw, path, question)
    custom_text = _text(raw, "custom_text", f"{path}.custom_text")
    return Answer(
        question_id=question_id, selected_options=selected, custom_text=custom_text.strip()
    )


def validate_response(
    raw: object, questions: Sequence[Question], pending_id: str
) -> ClarificationResponse:
    """Validate a respond body against the bundle's questions; return it normalized.

    `responded_at` is left None: the claim sets it.
    """
    if not isinstance(raw, Mapping):
        raise _fail(None, "the response body must be a JSON object")
    rejected = raw.get("rejected", False)
    if rejected is None:
        rejected = False
    if not isinstance(rejected, bool):
        raise _fail("rejected", "must be a boolean")
    reason = _text(raw, "reject_reason", "reject_reason")
    raw_answers = raw.get("answers")
    if raw_answers is None:
        raw_answers = []
    if not isinstance(raw_answers, list):
        raise _fail("answers", "must be a list")

    if rejected:
        if raw_answers:
            raise _fail("answers", "must be empty when rejected is true")
        return ClarificationResponse(
            pending_id=pending_id, answers=(), rejected=True, reject_reason=reason.strip()
        )

    by_id = {q.id: q for q in questions if q.id}
    given: dict[str, Answer] = {}
    for i, raw_answer in enumerate(raw_answers):
        answer = _answer(raw_answer, i, by_id, given)
        given[answer.question_id] = answer
    missing = [q.id for q in questions if q.id not in given]
    if missing:
        raise _fail(
            "answers",
            f"expected exactly one answer per question; missing {', '.join(map(repr, missing))}",
        )
    return ClarificationResponse(
        pending_id=pending_id,
        answers=tuple(given[q.id] for q in questions),
        rejected=False,
        reject_reason="",
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def answer_wire(answer: Answer) -> dict[str, Any]:
    return {
        "question_id": answer.question_id,
        "selected_options": list(answer.selected_options),
        "custom_text": answer.custom_text,
    }


def response_wire(response: ClarificationResponse) -> dict[str, Any]:
    """The response as the HTTP API shows it; every key is always present."""
    return {
        "pending_id": response.pending_id,
        "answers": [answer_wire(a) for a in response.answers],
        "rejected": response.rejected,
        "reject_reason": response.reject_reason,
        "responded_at": _iso(response.responded_at),
    }


def response_from_wire(data: Mapping[str, Any]) -> ClarificationResponse:
    """The inverse of `response_wire`, for events that carry a response."""
    responded_at = data.get("responded_at")
    return ClarificationResponse(
        pending_id=str(data["pending_id"]),
        answers=tuple(
            Answer(
                question_id=str(a["question_id"]),
                selected_options=tuple(str(o) for o in a.get("selected_options") or ()),
                custom_text=str(a.get("custom_text") or ""),
            )
            for a in data.get("answers") or ()
        ),
        rejected=bool(data.get("rejected", False)),
        reject_reason=str(data.get("reject_reason") or ""),
        responded_at=datetime.fromisoformat(responded_at) if responded_at else None,
    )


def tool_result_text(response: ClarificationResponse) -> str:
    """What the agent's `ask_user_question` call returns: JSON keyed by question id, or the
    rejection envelope."""
    if response.rejected:
        body: dict[str, Any] = {"rejected": True, "reject_reason": response.reject_reason}
    else:
        body = {
            a.question_id: {
                "selected_options": list(a.selected_options),
                "custom_text": a.custom_text,
            }
            for a in response.answers
        }
    return json.dumps(body, ensure_ascii=False)
