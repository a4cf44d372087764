"""The CLI's pure pieces: answer flags to a respond body, typed numbers, error and event text."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from clarion.cli.answer import _numbers, answers_body
from clarion.client.errors import CliError, api_error
from clarion.client.render import event_line, task_pending


def _bundle(*qids: str) -> dict[str, Any]:
    options = [
        {"option_id": "postgres", "label": "PostgreSQL", "description": ""},
        {"option_id": "sqlite", "label": "SQLite", "description": ""},
    ]
    return {"questions": [{"id": q, "prompt": f"{q}?", "options": options} for q in qids]}


@pytest.mark.parametrize("flag", ["db=postgres", "db=postgresql", "db=1", "postgres", "1"])
def test_an_option_is_found_by_id_label_or_number(flag: str) -> None:
    body = answers_body(_bundle("db"), [flag], [])
    assert body["answers"] == [
        {"question_id": "db", "selected_options": ["postgres"], "custom_text": ""}
    ]
    assert body["rejected"] is False


def test_text_with_an_equals_sign_answers_a_single_question() -> None:
    body = answers_body(_bundle("db"), [], ["x=1 please"])
    assert body["answers"][0]["custom_text"] == "x=1 please"


def test_several_questions_need_qids_and_each_an_answer() -> None:
    with pytest.raises(CliError, match="write it as QID=VALUE") as bare:
        answers_body(_bundle("a", "b"), ["postgres"], [])
    assert bare.value.exit_code == 2
    with pytest.raises(CliError, match="no question 'c'"):
        answers_body(_bundle("a", "b"), ["c=1"], [])
    with pytest.raises(CliError, match=r"no answer for question\(s\) b"):
        answers_body(_bundle("a", "b"), ["a=1"], [])
    body = answers_body(_bundle("a", "b"), ["a=1", "a=sqlite"], ["b=hi"])
    assert body["answers"] == [
        {"question_id": "a", "selected_options": ["postgres", "sqlite"], "custom_text": ""},
        {"question_id": "b", "selected_options": [], "custom_text": "hi"},
    ]


def test_typed_numbers_select_options_and_anything_else_is_text() -> None:
    assert _numbers("1,3", 3) == [1, 3]
    assert _numbers("2 2", 3) == [2]
    assert _numbers("4", 3) == []  # out of range: asked again
    assert _numbers("1 because", 3) is None  # text


@pytest.mark.parametrize(
    ("status", "code"), [(400, 2), (401, 6), (404, 3), (409, 4), (500, 1), (503, 5)]
)
def test_each_status_has_its_exit_code(status: int, code: int) -> None:
    body = '{"error": {"code": "x", "message": "m", "retryable": false}}'
    assert api_error(status, body, "doing").exit_code == code


def test_a_retryable_500_says_the_same_answer_may_be_sent_again() -> None:
    body = '{"error": {"code": "resume_not_accepted", "message": "m", "retryable": true}}'
    details = api_error(500, body, "x").details
    assert "a retry is safe: the same request may be sent again" in details


def test_a_question_event_line_names_the_command_to_answer_it() -> None:
    line = event_line(
        {
            "type": "notification",
            "action": "session.message.added",
            "timestamp": "2026-01-02T03:04:05.678+00:00",
            "payload": {
                "session_id": "S",
                "author_type": "agent",
                "type": "clarification_request",
                "content": "Which [bold]database[/bold]?",
                "metadata": {"pending_id": "P", "status": "pending"},
            },
        }
    )
    assert line.startswith("03:04:05 session.message.added")
    assert "QUESTION Which [bold]database[/bold]? (pending P; answer: clarion answer P)" in line


def test_the_pending_marker_follows_the_summary_then_the_legacy_field() -> None:
    assert task_pending({"status_summary": {"pending_action": "clarification"}}) == "clarification"
    assert task_pending({"status_summary": None, "task_pending_action": "permission"}) == (
        "permission"
    )
    assert task_pending({"status_summary": {"revision": 3}, "task_pending_action": None}) is None


def test_client_commands_start_without_the_database_layer() -> None:
    # Every command but `serve`, `demo` and `token create` talks HTTP: loading SQLAlchemy and the
    # store for them would double the start-up of each `clarion` call.
    probe = (
        "import sys, clarion.cli.app\n"
        "print(sorted(m for m in sys.modules if m.startswith(('sqlalchemy', 'clarion.store'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_deadline_reads_as_time_left_and_what_follows() -> None:
    from datetime import UTC, datetime

    from clarion.client.render import waiting_line

    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    bundle = {"expires_at": "2026-01-01T15:00:00+00:00", "on_expiry": "default"}
    line = waiting_line({**bundle, "escalated_to": ["bob"]}, now)
    assert line is not None
    assert line.startswith("expires in 3 h (2026-01-01T15:00:00+00:00), then the default answer")
    assert line.endswith("; escalated to bob")
    assert waiting_line({"expires_at": None, "escalated_to": []}, now) is None
    assert waiting_line({**bundle, "on_expiry": "skip"}, datetime(2026, 1, 2, tzinfo=UTC)) == (
        "expires now (2026-01-01T15:00:00+00:00), then Skip"
    )


def test_a_permission_requests_long_input_is_one_line_cut_at_300_characters() -> None:
    import io

    from rich.console import Console

    from clarion.cli.permissions import show_permission

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=1000, color_system=None)
    raw = {"command": "echo   a\n" + "x" * 400}
    request = {"message_id": "m1", "tool_call": {"title": "t", "raw_input": raw}, "options": []}
    show_permission(console, {"id": "t1", "title": "T"}, request)
    (line,) = [ln for ln in buffer.getvalue().splitlines() if "input:" in ln]
    preview = line.split("input: ", 1)[1]
    assert preview.startswith("{'command': 'echo a\\n") and preview.endswith("…")
    assert len(preview) == 300
