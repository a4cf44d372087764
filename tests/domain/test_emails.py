"""Email messages: a subject naming the task, a text and an HTML part with the questions and
the answer link, a Message-ID that threads the messages of one question, ASCII on the wire, and
no header that question or task text can add (header injection)."""

from __future__ import annotations

import email
import email.policy
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

import pytest

from clarion.domain.emails import checked_address, email_message, one_line, subject_of
from clarion.domain.notification_events import NotificationFact

AT = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
DB = {
    "id": "db",
    "title": "Database",
    "prompt": "Which database should the service use?",
    "options": [
        {"option_id": "postgres", "label": "PostgreSQL", "description": "Relational"},
        {"option_id": "sqlite", "label": "SQLite", "description": ""},
    ],
}


def _fact(title: str = "Pick a database", **changes: Any) -> NotificationFact:
    values: dict[str, Any] = {
        "event": "clarification.requested",
        "task_id": "t1",
        "task_title": title,
        "session_id": "s1",
        "pending_id": "p1",
        "questions": (DB,),
    }
    values.update(changes)
    return NotificationFact(**values)


def _build(fact: NotificationFact, answer_url: str | None = "https://c.example/a/TOKEN") -> str:
    return email_message(
        fact,
        delivery_id="0190-d1",
        occurred_at=AT,
        sender="Clarion <clarion@example.com>",
        to=("alice@example.com", "Bob <bob@example.com>"),
        link="https://c.example/#/tasks/t1/sessions/s1",
        answer_url=answer_url,
    )


def _parse(raw: str) -> EmailMessage:
    message = email.message_from_string(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


def _parts(message: EmailMessage) -> dict[str, str]:
    return {
        part.get_content_type(): str(part.get_content())
        for part in message.walk()
        if not part.is_multipart()
    }


def test_a_question_email_names_the_task_and_carries_the_questions_and_the_answer_link() -> None:
    raw = _build(_fact())
    raw.encode("ascii")  # any SMTP server relays it unchanged
    assert "\r\n" in raw
    message = _parse(raw)
    assert message["Subject"] == (
        "[Clarion] Agent asks in Pick a database: Which database should the service use?"
    )
    assert message["From"] == "Clarion <clarion@example.com>"
    assert message["To"] == "alice@example.com, Bob <bob@example.com>"
    # The first message about a question opens its thread: its id is derived from the question.
    assert message["Message-ID"] == "<question.p1@example.com>"
    assert message["Auto-Submitted"] == "auto-generated"
    parts = _parts(message)
    assert set(parts) == {"text/plain", "text/html"}
    for body in parts.values():
        assert "Which database should the service use?" in body
        assert "PostgreSQL" in body and "SQLite" in body
        assert "https://c.example/a/TOKEN" in body
        assert "https://c.example/#/tasks/t1/sessions/s1" in body
    assert 'href="https://c.example/a/TOKEN"' in parts["text/html"]
    assert 'name="viewport"' in parts["text/html"]  # laid out for a phone's mail app


def test_an_event_without_a_question_is_a_plain_notice_without_an_answer_link() -> None:
    fact = _fact(event="session.failed", pending_id=None, questions=None, detail="exit 7")
    message = _parse(_build(fact, answer_url=None))
    assert message["Subject"] == "[Clarion] Session failed in Pick a database: exit 7"
    assert all("/a/" not in body for body in _parts(message).values())


def test_non_ascii_text_survives_the_ascii_wire() -> None:
    message = _parse(_build(_fact("Base de données — été")))
    assert message["Subject"].startswith("[Clarion] Agent asks in Base de données — été")
    assert "Base de données — été" in _parts(message)["text/html"]


INJECTIONS = [
    "Pick\r\nBcc: evil@attacker.example",
    "Pick\nBcc: evil@attacker.example",
    "Pick\rBcc: evil@attacker.example",
    "Pick\u2028Bcc: evil@attacker.example",
    "Pick\x85Bcc: evil@attacker.example",
    "Pick\r\n\r\n<html>body takeover</html>",
    "Pick\x00\x0b\x0cBcc: evil@attacker.example",
    "=?utf-8?q?Pick=0D=0ABcc=3A_evil=40attacker=2Eexample?=",
]


@pytest.mark.parametrize("evil", INJECTIONS)
def test_newlines_in_task_or_question_text_never_reach_a_header(evil: str) -> None:
    question = {**DB, "title": evil, "prompt": evil}
    raw = _build(_fact(title=evil, questions=(question,)))
    head = raw.split("\r\n\r\n", 1)[0]
    names = [line.split(":", 1)[0] for line in head.split("\r\n") if not line[:1].isspace()]
    assert names == [
        "Subject",
        "From",
        "To",
        "Date",
        "Message-ID",
        "Auto-Submitted",
        "X-Clarion-Event",
        "MIME-Version",
        "Content-Type",
    ]
    message = _parse(raw)
    assert message["Bcc"] is None
    assert message.get_all("To") == ["alice@example.com, Bob <bob@example.com>"]
    assert "\n" not in message["Subject"] and "\r" not in message["Subject"]
    assert set(_parts(message)) == {"text/plain", "text/html"}
    assert "<html>body takeover" not in _parts(message)["text/html"]


def test_a_long_subject_is_cut_with_an_ellipsis() -> None:
    subject = subject_of(_fact("x" * 400))
    assert len(subject) == 150 and subject.endswith("…")


def test_one_line_folds_every_line_break_and_control_character() -> None:
    assert one_line("a\r\nb\nc\rd\u2028e\u2029f\x85g\x00h\t i") == "a b c d e f g h i"


@pytest.mark.parametrize(
    "bad", ["", "no-at-sign", "a@b.c\r\nBcc: x@y.z", "a@b.c\nBcc: x@y.z", 7, None]
)
def test_a_configured_address_must_be_one_address_on_one_line(bad: object) -> None:
    with pytest.raises(ValueError, match=r"notifications\.email\.from"):
        checked_address(bad, "notifications.email.from")


def test_a_configured_address_may_carry_a_display_name() -> None:
    assert checked_address("Clarion <c@example.com>", "f") == "Clarion <c@example.com>"


@pytest.mark.parametrize(
    "bad",
    [
        "@example.com",
        "a b@example.com",
        "a@b c",
        '"a@b',
        "<a@b",
        "Clarion <c@example.com> x",
        "a@example.com, b@example.com",
        "team: a@b.c;",
        "baa:[..><=;b",
        "(\\a=) .?)[)",
        "é.<> =?",
    ],
)
def test_an_address_the_email_package_cannot_parse_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ValueError, match=r"notifications\.email\.to must be an email address"):
        checked_address(bad, "notifications.email.to")


def test_a_subject_that_would_decode_to_two_lines_is_never_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # subject_of breaks up encoded words; should one ever slip through, the message is refused.
    import clarion.domain.emails as emails

    monkeypatch.setattr(emails, "subject_of", lambda fact: "=?utf-8?q?a=0D=0ABcc:_x@y.z?=")
    with pytest.raises(ValueError, match="one line"):
        _build(_fact())


MARKDOWN_Q = {
    "id": "cache",
    "title": "Cache",
    "prompt": "Use a **cache**? See [notes](https://example.com/n) and [x](javascript:alert(1)).",
    "options": [
        {"option_id": "redis", "label": "**Redis**", "description": "Runs `redis-server`"},
        {"option_id": "none", "label": "No cache", "description": "", "default": True},
    ],
}


def test_markdown_renders_to_html_with_a_plain_text_fallback_and_the_default_is_named() -> None:
    parts = _parts(_parse(_build(_fact(questions=(MARKDOWN_Q,)))))
    html, text = parts["text/html"], parts["text/plain"]
    assert "<strong>cache</strong>" in html and '<a href="https://example.com/n">notes</a>' in html
    assert "<strong>Redis</strong>" in html and "redis-server</code>" in html
    assert "javascript:" not in html.replace("[x](javascript:alert(1))", "")
    assert 'href="javascript' not in html
    assert "**" not in text and "notes (https://example.com/n)" in text
    assert "No cache (default)" in text and "(default)</span>" in html


def _answered(event: str, response: dict[str, Any], **changes: Any) -> NotificationFact:
    return _fact(event=event, response=response, questions=(MARKDOWN_Q,), **changes)


def test_answered_skipped_and_expired_emails_say_what_was_chosen() -> None:
    answered = _parts(
        _parse(
            _build(
                _answered(
                    "clarification.answered",
                    {
                        "answers": [
                            {
                                "question_id": "cache",
                                "selected_options": ["redis"],
                                "custom_text": "v7",
                            }
                        ],
                        "rejected": False,
                        "reject_reason": "",
                    },
                    detail="answered",
                ),
                None,
            )
        )
    )
    assert "Chosen:" in answered["text/plain"] and "Cache: Redis, “v7”" in answered["text/plain"]
    skipped = _parts(
        _parse(
            _build(
                _answered(
                    "clarification.answered",
                    {
                        "answers": [],
                        "rejected": True,
                        "reject_reason": "User skipped",
                    },
                    detail="skipped",
                ),
                None,
            )
        )
    )
    assert "Skipped: User skipped" in skipped["text/plain"]
    expired = _parts(
        _parse(
            _build(
                _answered(
                    "clarification.expired",
                    {
                        "answers": [
                            {
                                "question_id": "cache",
                                "selected_options": ["none"],
                                "custom_text": "",
                            }
                        ],
                        "rejected": False,
                        "reject_reason": "",
                    },
                ),
                None,
            )
        )
    )
    assert "The expiry policy chose:" in expired["text/plain"]
    assert "Cache: No cache, the default" in expired["text/plain"]
    assert "No cache, the default" in expired["text/html"]


def test_later_messages_of_a_question_reply_to_its_first() -> None:
    first = _parse(_build(_fact()))
    later = _parse(_build(_fact(event="clarification.reminder")))
    assert later["Message-ID"] == "<0190-d1@example.com>"
    assert later["In-Reply-To"] == first["Message-ID"] == later["References"]
    asked = _fact(
        event="permission.requested",
        pending_id=None,
        message_id="m1",
        questions=None,
        tool_call={"title": "Run ls", "kind": "execute"},
    )
    decided = _fact(
        event="permission.decided",
        pending_id=None,
        message_id="m1",
        questions=None,
        tool_call={"title": "Run ls", "kind": "execute"},
    )
    assert _parse(_build(decided, None))["In-Reply-To"] == _parse(_build(asked, None))["Message-ID"]
    failed = _parse(_build(_fact(event="session.failed", pending_id=None, questions=None), None))
    assert failed["In-Reply-To"] is None


@pytest.mark.parametrize(
    ("tool_call", "shown"),
    [
        (
            {"title": "Execute", "raw_input": {"command": ["ls", "-la", "my dir"]}},
            'ls -la "my dir"',
        ),
        (
            {
                "title": "Edit README.md",
                "raw_input": {"path": "README.md", "old_string": "a\n", "new_string": "b\n"},
            },
            "+b",
        ),
        (
            {
                "title": "Edit",
                "content": [{"type": "diff", "path": "x.py", "oldText": "1\n", "newText": "2\n"}],
            },
            "-1",
        ),
        (
            {"title": "Fetch", "raw_input": {"url": "https://example.com/x"}},
            "https://example.com/x",
        ),
    ],
)
def test_a_permission_email_shows_the_command_or_the_diff(
    tool_call: dict[str, Any], shown: str
) -> None:
    fact = _fact(
        event="permission.requested",
        pending_id=None,
        message_id="m1",
        questions=None,
        tool_call=tool_call,
    )
    parts = _parts(_parse(_build(fact, None)))
    assert shown in parts["text/plain"]
    assert shown.replace('"', "&quot;") in parts["text/html"]


def test_an_open_questions_email_shows_its_deadline_and_what_happens_then() -> None:
    due = datetime(2026, 5, 1, 17, 0, tzinfo=UTC)
    fact = _fact(questions=(MARKDOWN_Q,), expires_at=due, on_expiry="default")
    parts = _parts(_parse(_build(fact)))
    line = "Answer by 2026-05-01 17:00 UTC. If no one answers by then, the agent gets the default"
    assert f"{line} answer: No cache." in parts["text/plain"]
    assert line in parts["text/html"]
    skip = _parts(_parse(_build(_fact(expires_at=due, on_expiry="skip"))))
    assert "the question is skipped." in skip["text/plain"]
    # A closed question's email has no deadline to meet.
    closed = _parts(_parse(_build(_fact(event="clarification.answered", expires_at=due), None)))
    assert "Answer by" not in closed["text/plain"]
