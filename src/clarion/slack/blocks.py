"""The Block Kit layout of a question's Slack message, its closed form and its answer modal,
built with slack-sdk's Block Kit models from what the outbox stored (domain/slack.py).

A single-question bundle gets a button per option; every bundle gets `Skip` and `Answer…`
(the modal with every question, its options and free text). Text from agents and people is
escaped for mrkdwn and cut to Slack's limits, so a long question never makes Slack refuse the
whole message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    RadioButtonsElement,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from clarion.domain.slack import (
    MODAL_CALLBACK,
    MODAL_OPTIONS,
    MODAL_TEXT,
    OPEN_ACTION,
    OPTION_ACTION,
    SKIP_ACTION,
    button_value,
    options_block,
    text_block,
)

_SECTION_MAX = 2900  # Slack allows 3000 characters in a section's text
_BUTTON_MAX = 75
_OPTION_MAX = 75
_RADIO_MAX = 10  # more options than this: a menu instead of radio buttons
_BUTTONS_MAX = 23  # an actions block holds 25 elements; Skip and Answer… take two


def esc(text: str) -> str:
    """Text safe inside mrkdwn: Slack reads `&`, `<` and `>` as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _question_text(question: Mapping[str, Any], *, list_options: bool) -> str:
    title = str(question.get("title") or "")
    prompt = str(question.get("prompt") or "")
    lines = [f"*{esc(title)}*"] if title and title != prompt else []
    lines.append(esc(prompt))
    if list_options:
        for option in question.get("options") or []:
            label = esc(str(option.get("label") or option.get("option_id") or ""))
            more = str(option.get("description") or "")
            lines.append(f"• {label}" + (f" — {esc(more)}" if more else ""))
    return cut("\n".join(lines), _SECTION_MAX)


def _head(body: Mapping[str, Any]) -> list[Block]:
    task = body.get("task") or {}
    title = esc(str(task.get("title") or task.get("id") or "a task"))
    link = str(body.get("link") or "")
    where = f"<{link}|{title}>" if link else title
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=f"*Agent asks in {where}*"))]
    context = str(body.get("context") or "").strip()
    if context:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=cut(esc(context), 2000))]))
    return blocks


def question_blocks(body: Mapping[str, Any]) -> list[Block]:
    """The open message: the task, the agent's context, each question, the buttons."""
    questions: Sequence[Mapping[str, Any]] = body.get("questions") or []
    pending_id = str(body.get("pending_id") or "")
    single = len(questions) == 1
    blocks = _head(body)
    for question in questions:
        blocks.append(
            SectionBlock(text=MarkdownTextObject(text=_question_text(question, list_options=False)))
        )
    elements: list[ButtonElement] = []
    if single:
        question_id = str(questions[0].get("id") or "")
        for index, option in enumerate((questions[0].get("options") or [])[:_BUTTONS_MAX]):
            elements.append(
                ButtonElement(
                    text=cut(str(option.get("label") or option.get("option_id")), _BUTTON_MAX),
                    action_id=f"{OPTION_ACTION}_{index}",
                    value=button_value(pending_id, question_id, str(option.get("option_id"))),
                )
            )
    elements.append(
        ButtonElement(text="Skip", action_id=SKIP_ACTION, value=button_value(pending_id))
    )
    elements.append(
        ButtonElement(
            text="Answer…",
            action_id=OPEN_ACTION,
            value=button_value(pending_id),
            style="primary",
        )
    )
    blocks.append(ActionsBlock(block_id=f"clarion:{cut(pending_id, 200)}", elements=elements))
    answer_url = body.get("answer_url")
    if answer_url:
        blocks.append(
            ContextBlock(
                elements=[MarkdownTextObject(text=f"<{answer_url}|Answer in the browser>")]
            )
        )
    return blocks


def closed_blocks(body: Mapping[str, Any], outcome: str) -> list[Block]:
    """The message once the question left the active states: no buttons, the outcome."""
    questions: Sequence[Mapping[str, Any]] = body.get("questions") or []
    blocks = _head(body)
    for question in questions:
        blocks.append(
            SectionBlock(text=MarkdownTextObject(text=_question_text(question, list_options=False)))
        )
    blocks.append(SectionBlock(text=MarkdownTextObject(text=cut(f"*{esc(outcome)}*", 2900))))
    return blocks


def as_dicts(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    return [block.to_dict() for block in blocks]


def answer_modal(body: Mapping[str, Any], private_metadata: str) -> View:
    """The modal `Answer…` opens: every question, its options and a free-text field."""
    questions: Sequence[Mapping[str, Any]] = body.get("questions") or []
    blocks: list[Block] = _head(body)
    for index, question in enumerate(questions):
        blocks.append(
            SectionBlock(text=MarkdownTextObject(text=_question_text(question, list_options=True)))
        )
        options = [
            Option(
                text=PlainTextObject(
                    text=cut(str(o.get("label") or o.get("option_id")), _OPTION_MAX)
                ),
                value=str(o.get("option_id")),
            )
            for o in (question.get("options") or [])[:100]
        ]
        label = cut(str(question.get("title") or f"Question {index + 1}"), 2000)
        if options:
            element: RadioButtonsElement | StaticSelectElement = (
                RadioButtonsElement(action_id=MODAL_OPTIONS, options=options)
                if len(options) <= _RADIO_MAX
                else StaticSelectElement(
                    action_id=MODAL_OPTIONS, options=options, placeholder="Choose an option"
                )
            )
            blocks.append(
                InputBlock(
                    block_id=options_block(index), label=label, element=element, optional=True
                )
            )
        blocks.append(
            InputBlock(
                block_id=text_block(index),
                label="Your answer" if not options else "Or in your own words",
                element=PlainTextInputElement(
                    action_id=MODAL_TEXT, multiline=True, max_length=2000
                ),
                optional=True,
            )
        )
    return View(
        type="modal",
        callback_id=MODAL_CALLBACK,
        title="Answer the agent",
        submit="Send",
        close="Cancel",
        private_metadata=private_metadata,
        blocks=blocks,
    )


def modal_metadata(pending_id: str, channel: str | None, ts: str | None) -> str:
    return json.dumps({"p": pending_id, "c": channel, "ts": ts}, separators=(",", ":"))
