"""Parse and validate the input of the `ask_user_question` tool; shape a bundle's rows.

Pure; the MCP edge and the clarification services import it. Invalid input raises
`errors.InvalidInput` whose `field` names the first bad field as a path such as
`questions[1].options[0].label`, so the tool error can point at it and nothing is written.

Accepted input: `questions` (1-4 items `{id?, title?, prompt, options}`, options 2-6 items
`{label, description?, option_id?, default?}`, at most one default per question), and
`context` or kandev's `context_paragraphs` (a list of strings joined with a blank line, which
overrides `context`). Strings are trimmed; a missing or blank id gets the default `q<n>`
(question position) and `q<n>_opt<m>` (option position).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clarion.domain.errors import InvalidInput
from clarion.domain.lifecycle import ASK
from clarion.domain.models import MetaKey, Question, QuestionOption

MIN_QUESTIONS = 1
MAX_QUESTIONS = 4
MIN_OPTIONS = 2
MAX_OPTIONS = 6


def _fail(field: str, message: str) -> InvalidInput:
    return InvalidInput(f"{field}: {message}", field=field)


def _optional_text(item: Mapping[str, Any], key: str, path: str) -> str:
    """A trimmed optional string; None and a missing key read as empty."""
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail(f"{path}.{key}", "must be a string")
    return value.strip()


def _required_text(item: Mapping[str, Any], key: str, path: str) -> str:
    value = _optional_text(item, key, path)
    if not value:
        raise _fail(f"{path}.{key}", "is required and must not be empty")
    return value


def _parse_option(raw: object, path: str, default_id: str) -> QuestionOption:
    if not isinstance(raw, Mapping):
        raise _fail(path, "must be an object")
    label = _required_text(raw, "label", path)
    description = _optional_text(raw, "description", path)
    option_id = _optional_text(raw, "option_id", path) or default_id
    default = raw.get("default", False)
    if default is None:
        default = False
    if not isinstance(default, bool):
        raise _fail(f"{path}.default", "must be true or false")
    return QuestionOption(
        option_id=option_id, label=label, description=description, default=default
    )


def _parse_question(raw: object, index: int) -> Question:
    path = f"questions[{index}]"
    if not isinstance(raw, Mapping):
        raise _fail(path, "must be an object")
    question_id = _optional_text(raw, "id", path) or f"q{index + 1}"
    title = _optional_text(raw, "title", path)
    prompt = _required_text(raw, "prompt", path)
    raw_options = raw.get("options")
    if not isinstance(raw_options, list):
        raise _fail(f"{path}.options", "must be a list")
    if not MIN_OPTIONS <= len(raw_options) <= MAX_OPTIONS:
        raise _fail(
            f"{path}.options",
            f"must have {MIN_OPTIONS} to {MAX_OPTIONS} options, got {len(raw_options)}",
        )
    options: list[QuestionOption] = []
    seen: set[str] = set()
    for m, raw_option in enumerate(raw_options):
        option_path = f"{path}.options[{m}]"
        option = _parse_option(raw_option, option_path, f"q{index + 1}_opt{m + 1}")
        if option.option_id in seen:
            raise _fail(f"{option_path}.option_id", f"duplicate option id {option.option_id!r}")
        seen.add(option.option_id)
        if option.default and any(o.default for o in options):
            raise _fail(f"{option_path}.default", "at most one option per question is default")
        options.append(option)
    return Question(id=question_id, title=title, prompt=prompt, options=tuple(options))


def _parse_context(raw: Mapping[str, Any]) -> str:
    paragraphs = raw.get("context_paragraphs")
    if paragraphs is not None:
        if not isinstance(paragraphs, list):
            raise _fail("context_paragraphs", "must be a list of strings")
        texts: list[str] = []
        for i, paragraph in enumerate(paragraphs):
            if not isinstance(paragraph, str):
                raise _fail(f"context_paragraphs[{i}]", "must be a string")
            if paragraph.strip():
                texts.append(paragraph.strip())
        return "\n\n".join(texts)
    context = raw.get("context")
    if context is None:
        return ""
    if not isinstance(context, str):
        raise _fail("context", "must be a string")
    return context.strip()


def parse_ask(raw: object) -> tuple[tuple[Question, ...], str]:
    """Validate the tool arguments; return the normalized questions and the context text."""
    if not isinstance(raw, Mapping):
        raise InvalidInput("the tool arguments must be an object", field=None)
    raw_questions = raw.get("questions")
    if not isinstance(raw_questions, list):
        raise _fail("questions", "must be a list")
    if not MIN_QUESTIONS <= len(raw_questions) <= MAX_QUESTIONS:
        raise _fail(
            "questions",
            f"must have {MIN_QUESTIONS} to {MAX_QUESTIONS} questions, got {len(raw_questions)}",
        )
    questions: list[Question] = []
    seen: set[str] = set()
    for n, raw_question in enumerate(raw_questions):
        question = _parse_question(raw_question, n)
        if question.id in seen:
            raise _fail(f"questions[{n}].id", f"duplicate question id {question.id!r}")
        seen.add(question.id)
        questions.append(question)
    return tuple(questions), _parse_context(raw)


def question_wire(question: Question) -> dict[str, Any]:
    """A question as stored in row metadata and shown by `GET /clarification/{id}`."""
    return {
        "id": question.id,
        "title": question.title,
        "prompt": question.prompt,
        "options": [_option_wire(o) for o in question.options],
    }


def _option_wire(option: QuestionOption) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "option_id": option.option_id,
        "label": option.label,
        "description": option.description,
    }
    if option.default:  # only when marked: a question without a default reads as before
        wire["default"] = True
    return wire


def bundle_row_metadata(
    pending_id: str, questions: Sequence[Question], context: str, *, waiting: bool = False
) -> list[dict[str, Any]]:
    """The metadata of each row of a new bundle, one per question, with kandev's keys: the
    question's own, then what the ASK transition writes (pending); with `waiting`, the mark of
    a bundle asked under a waiting policy that can fire."""
    total = len(questions)
    marks: dict[str, Any] = {MetaKey.WAITING: True} if waiting else {}
    return [
        ASK.change(
            {
                **marks,
                MetaKey.PENDING_ID: pending_id,
                MetaKey.QUESTION_ID: q.id,
                MetaKey.QUESTION: question_wire(q),
                MetaKey.QUESTION_INDEX: i,
                MetaKey.QUESTION_TOTAL: total,
                MetaKey.CONTEXT: context,
            }
        )
        for i, q in enumerate(questions)
    ]
