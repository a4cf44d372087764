"""Text from agents and clients reaches the terminal neutralised: escape sequences, other
control characters and bidirectional overrides print as visible escapes, never obeyed."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from clarion.cli.answer import _report
from clarion.client.errors import api_error
from clarion.client.render import event_line, print_error, question_block, tasks_table
from clarion.client.sanitize import safe

CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"
RED = "\x1b[31m"
HOSTILE = f"x{CLEAR}{TITLE}{RED}\r\x08\x9b1m\u202eevil\u2066y"
FORBIDDEN = ["\x1b", "\x07", "\r", "\x08", "\x9b", "\u202e", "\u2066"]


def rendered(renderable: Any) -> str:
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=False, width=400, color_system=None).print(renderable)
    return buffer.getvalue()


def assert_neutral(text: str) -> None:
    for char in FORBIDDEN:
        assert char not in text, (char, text)
    assert "\\x1b[2J" in text  # shown, not obeyed


def test_safe_keeps_text_newlines_and_tabs_and_shows_controls() -> None:
    assert safe("plain [markup] é 漢字") == "plain [markup] é 漢字"
    assert safe("a\nb\tc") == "a\nb\tc"
    assert safe(f"{CLEAR}{TITLE}") == "\\x1b[2J\\x1b]0;pwned\\x07"
    assert safe("\u202eabc") == "\\u202eabc"
    assert safe("\x00\x7f\x85") == "\\x00\\x7f\\x85"
    assert safe(42) == "42"


def test_task_table_neutralises_titles_and_ids() -> None:
    task = {
        "id": f"t{RED}",
        "title": HOSTILE,
        "workflow_step": HOSTILE,
        "status_summary": {"pending_action": HOSTILE},
    }
    assert_neutral(rendered(tasks_table([task])))


def test_question_block_neutralises_every_field() -> None:
    question = {
        "id": HOSTILE,
        "title": HOSTILE,
        "prompt": HOSTILE,
        "options": [{"option_id": HOSTILE, "label": HOSTILE, "description": HOSTILE}],
    }
    assert_neutral(rendered(question_block(1, 1, question)))


@pytest.mark.parametrize(
    "envelope",
    [
        {
            "type": "notification",
            "action": "session.message.added",
            "payload": {
                "session_id": "s",
                "author_type": "agent",
                "type": "message",
                "content": HOSTILE,
            },
        },
        {
            "type": "notification",
            "action": "session.message.added",
            "payload": {
                "session_id": "s",
                "author_type": "agent",
                "type": "clarification_request",
                "content": HOSTILE,
                "metadata": {"pending_id": HOSTILE, "status": "pending"},
            },
        },
        {"type": "notification", "action": "task.created", "payload": {"task": {"title": HOSTILE}}},
        {"type": "error", "action": HOSTILE, "payload": {"code": HOSTILE, "message": HOSTILE}},
        {
            "type": "notification",
            "action": "session.message.updated",
            "payload": {
                "type": "clarification_request",
                "metadata": {
                    "status": "answered",
                    "response": {"question_id": HOSTILE, "custom_text": HOSTILE},
                },
            },
        },
    ],
)
def test_event_lines_are_neutralised(envelope: dict[str, Any]) -> None:
    line = event_line(envelope)
    for char in FORBIDDEN:
        assert char not in line
    assert "\\x1b" in line


def test_server_error_messages_are_neutralised(capsys: pytest.CaptureFixture[str]) -> None:
    body = (
        '{"error": {"code": "not_active", "message": "'
        + HOSTILE.encode("unicode_escape").decode()
        + '", "retryable": false, "state": "terminal", "response": '
        '{"rejected": true, "reject_reason": "' + HOSTILE.encode("unicode_escape").decode() + '"}}}'
    )
    error = api_error(409, body, "sending the answer")
    print_error(error)
    assert_neutral(capsys.readouterr().err)


def test_answer_report_is_neutralised() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=400, color_system=None)
    _report(console, {"status": "rejected", "response": {"reject_reason": HOSTILE}})
    _report(
        console,
        {
            "status": "answered",
            "resumed": True,
            "successor_turn_id": HOSTILE,
            "response": {"answers": [{"question_id": "q", "custom_text": HOSTILE}]},
        },
    )
    assert_neutral(buffer.getvalue())


def test_a_live_answer_report_claims_no_more_than_the_server_knows() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=400, color_system=None)
    _report(console, {"status": "answered", "resumed": False, "response": {"answers": []}})
    text = buffer.getvalue()
    assert "received the answer" not in text
    assert "waiting question call" in text and "new prompt" in text


def test_a_permission_request_prints_its_tool_and_options_neutralised() -> None:
    from clarion.cli.permissions import show_permission

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=400, color_system=None)
    request = {
        "message_id": "m1",
        "tool_call": {"title": HOSTILE, "kind": "edit", "raw_input": {"path": HOSTILE}},
        "options": [{"option_id": "allow", "name": HOSTILE, "kind": "allow_once"}],
    }
    show_permission(console, {"id": "t1", "title": HOSTILE}, request)
    out = buffer.getvalue()
    assert_neutral(out)
    assert "evil" in out and "clarion allow m1" in out
