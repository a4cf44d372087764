"""Texts Clarion sends to agents: the resume prompt and the detached tool error.

Pure; the orchestrator (resume, watchdog handoff) and the MCP tool import it. The resume
prompt starts with `You previously asked the user:`, carries each question's prompt and its
answer (option labels and custom text), and ends with `Please continue with this information.`
One question reads as kandev's single form; several use its layout of `Q<n>:` lines, a blank
line, then `A<n>:` lines. A rejection never resumes the agent, so it has no prompt here.
"""

from __future__ import annotations

from collections.abc import Sequence

from clarion.domain.models import Answer, ClarificationResponse, Question

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
