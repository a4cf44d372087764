"""Texts Clarion sends to agents: the resume prompt and the detached tool error.

Pure; the orchestrator (resume, watchdog handoff) and the MCP tool import it. The resume
prompt starts with `You previously asked the user:`, carries each question's prompt and its
answer (option labels and custom text), and ends with `Please continue with this information.`
One question reads as kandev's single form; several use its layout of `Q<n>:` lines, a blank
line, then `A<n>:` lines. A rejection never resumes the agent, so it has no prompt here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clarion.domain.models import (
    Answer,
    ClarificationResponse,
    Message,
    MessageType,
    MetaKey,
    Question,
)

RESUME_PREFIX = "You previously asked the user:"
RESUME_SUFFIX = "Please continue with this information."
NO_ANSWER = "(no answer)"

# Returned as the tool error when the wait ends without an answer. It must tell the agent that
# the question stays open, that it should end its turn, and how the answer will arrive; the
# phrase "stays open" is what a scripted agent may look for.
DETACHED_TOOL_ERROR = (
    "The user has not answered yet. The question stays open and the user can still answer "
    "it. End your turn now and do not ask the same question again: the user's answer will "
    "arrive as a new prompt."
)


def _labels(question: Question, answer: Answer) -> list[str]:
    by_id = {o.option_id: o.label or o.option_id for o in question.options}
    return [by_id.get(option_id, option_id) for option_id in answer.selected_options]


def _single_answer_lines(question: Question, answer: Answer | None) -> list[str]:
    if answer is None:
        return ["User provided no specific answer."]
    lines: list[str] = []
    labels = _labels(question, answer)
    if labels:
        lines.append(f"User selected: {', '.join(labels)}")
    if answer.custom_text:
        lines.append(f"User answered: {answer.custom_text}")
    return lines or ["User provided no specific answer."]


def _answer_body(question: Question, answer: Answer | None) -> str:
    if answer is None:
        return NO_ANSWER
    parts: list[str] = []
    labels = _labels(question, answer)
    if labels:
        parts.append(", ".join(labels))
    if answer.custom_text:
        parts.append(answer.custom_text)
    return "; ".join(parts) or NO_ANSWER


def resume_prompt(questions: Sequence[Question], response: ClarificationResponse) -> str:
    """The prompt that hands an answered bundle to the agent in a successor turn."""
    answers = {a.question_id: a for a in response.answers}
    if len(questions) == 1:
        question = questions[0]
        lines = [f'{RESUME_PREFIX} "{question.prompt}"']
        lines += _single_answer_lines(question, answers.get(question.id))
    else:
        lines = [RESUME_PREFIX]
        lines += [f"Q{n}: {q.prompt}" for n, q in enumerate(questions, start=1)]
        lines.append("")
        lines += [
            f"A{n}: {_answer_body(q, answers.get(q.id))}" for n, q in enumerate(questions, start=1)
        ]
    lines.append(RESUME_SUFFIX)
    return "\n".join(lines)


# A restarted agent that cannot load its ACP session gets the conversation back as text at the
# head of its next prompt. Bounded, newest kept: an agent's context is finite, and the most
# recent exchanges are the ones the new prompt continues.
RECAP_HEADER = (
    "[Clarion] Your process was restarted and this session's earlier conversation could not "
    "be loaded. Recap of the conversation so far, oldest first:"
)
RECAP_FOOTER = "[End of recap]"
RECAP_MAX_CHARS = 4000
RECAP_ENTRY_MAX_CHARS = 600

_SPEAKERS = {"user": "User", "agent": "Agent"}


@dataclass(frozen=True, slots=True)
class RecapEntry:
    """One transcript line of a recap: who said it and what."""

    author: str  # "user" | "agent" | "question" | "answer"
    text: str


def recap_entries(messages: Sequence[Message]) -> list[RecapEntry]:
    """The transcript messages a recap carries, oldest first: the person's prompts, the
    agent's text and its questions with the answer each got."""
    entries: list[RecapEntry] = []
    for message in messages:
        if message.type == MessageType.MESSAGE and message.author_type.value in _SPEAKERS:
            entries.append(RecapEntry(message.author_type.value, message.content))
        elif message.type == MessageType.CLARIFICATION_REQUEST:
            entries.append(RecapEntry("question", message.content))
            response = message.metadata.get(MetaKey.RESPONSE)
            if isinstance(response, dict):
                labels = _option_labels(message)
                picked = ", ".join(
                    labels.get(str(o), str(o)) for o in response.get("selected_options") or []
                )
                text = "; ".join(p for p in (picked, str(response.get("custom_text") or "")) if p)
                entries.append(RecapEntry("answer", text or NO_ANSWER))
    return entries


def _option_labels(message: Message) -> dict[str, str]:
    question = message.metadata.get(MetaKey.QUESTION)
    options = question.get("options") if isinstance(question, dict) else None
    return {
        str(o.get("option_id")): str(o.get("label") or o.get("option_id"))
        for o in (options if isinstance(options, list) else [])
        if isinstance(o, dict)
    }


def _line(entry: RecapEntry) -> str:
    speaker = {"question": "Agent asked", "answer": "User answered"}.get(
        entry.author, _SPEAKERS.get(entry.author, entry.author)
    )
    text = " ".join(entry.text.split())
    if len(text) > RECAP_ENTRY_MAX_CHARS:
        text = text[: RECAP_ENTRY_MAX_CHARS - 1] + "…"
    return f"{speaker}: {text}"


def recap(entries: Sequence[RecapEntry], *, max_chars: int = RECAP_MAX_CHARS) -> str:
    """The recap text for `entries` (oldest first), keeping the newest lines that fit in
    `max_chars`; "" when there is nothing to recall."""
    kept: list[str] = []
    used = 0
    for entry in reversed(entries):
        line = _line(entry)
        if kept and used + len(line) + 1 > max_chars:
            break
        kept.append(line)
        used += len(line) + 1
    if not kept:
        return ""
    omitted = len(entries) - len(kept)
    head = [RECAP_HEADER] + ([f"({omitted} earlier messages omitted)"] if omitted else [])
    return "\n".join([*head, *reversed(kept), RECAP_FOOTER])


def with_recap(recap_text: str, prompt: str) -> str:
    """`prompt` preceded by `recap_text` (unchanged when there is no recap)."""
    return f"{recap_text}\n\n{prompt}" if recap_text else prompt


def recap_after(recap_text: str, prompt: str) -> str:
    """`prompt` followed by `recap_text`: for a prompt whose first words are promised (a
    review begins `Review of your changes:`), the context comes after it, in the same turn."""
    return f"{prompt}\n\n{recap_text}" if recap_text else prompt
