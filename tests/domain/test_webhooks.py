"""Webhook bodies, readable lines and signatures (pure)."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

from clarion.domain.notification_events import (
    PERMISSION_DECIDED,
    PERMISSION_REQUESTED,
    NotificationFact,
    wants_decision_url,
)
from clarion.domain.webhooks import encode_body, signature, text_of, webhook_body

WHEN = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def _asked() -> NotificationFact:
    return NotificationFact(
        "clarification.requested",
        "t1",
        "Pick a database",
        "s1",
        pending_id="p1",
        questions=({"id": "db", "title": "DB", "prompt": "Which database?", "options": []},),
    )


def test_the_body_carries_the_contract_fields_and_a_link_to_the_session() -> None:
    body = webhook_body(_asked(), delivery_id="d1", occurred_at=WHEN, base_url="http://x:1/")
    assert body == {
        "event": "clarification.requested",
        "delivery_id": "d1",
        "occurred_at": "2026-05-01T09:00:00+00:00",
        "task": {"id": "t1", "title": "Pick a database"},
        "session_id": "s1",
        "pending_id": "p1",
        "questions": [{"id": "db", "title": "DB", "prompt": "Which database?", "options": []}],
        "link": "http://x:1/#/tasks/t1/sessions/s1",
        "text": "Agent asks in Pick a database: Which database? http://x:1/#/tasks/t1/sessions/s1",
    }
    assert "message_id" not in body and "tool_call" not in body


def test_the_readable_line_is_one_line_for_every_event() -> None:
    fact = NotificationFact(
        "permission.requested",
        "t1",
        "Fix\nbug",
        "s1",
        message_id="m1",
        tool_call={"title": "rm -rf"},
    )
    line = text_of(fact, "L")
    assert line == "Agent asks permission in Fix bug: rm -rf L"
    failed = NotificationFact("session.failed", "t1", "", "s1", detail="exit 7")
    assert text_of(failed, "L") == "Session failed in t1: exit 7 L"


def test_the_signature_is_the_hex_hmac_sha256_of_the_raw_body() -> None:
    raw = encode_body({"a": "é"}).encode()
    expected = hmac.new(b"k", raw, hashlib.sha256).hexdigest()
    assert signature("k", raw) == f"sha256={expected}"


CONTRACT_KEYS = {
    "event",
    "delivery_id",
    "occurred_at",
    "task",
    "session_id",
    "pending_id",
    "message_id",
    "questions",
    "tool_call",
    "link",
    "text",
}


def test_every_event_body_has_only_the_contract_fields_and_says_how_it_ended() -> None:
    facts = [
        NotificationFact(
            "clarification.answered", "t1", "T", "s1", pending_id="p", detail="skipped"
        ),
        NotificationFact("permission.decided", "t1", "T", "s1", message_id="m", detail="rejected"),
        NotificationFact("session.failed", "t1", "T", "s1", message_id="m", detail="exit 7"),
    ]
    lines = []
    for fact in facts:
        body = webhook_body(fact, delivery_id="d", occurred_at=WHEN, base_url="http://x")
        assert set(body) <= CONTRACT_KEYS
        lines.append(body["text"])
    assert lines[0].startswith("Skipped in T: a question")
    assert lines[1].startswith("Permission rejected in T: a tool call")
    assert lines[2].startswith("Session failed in T: exit 7")


def test_the_readable_line_skips_questions_without_text() -> None:
    fact = NotificationFact(
        "clarification.requested",
        "t1",
        "Pick a database",
        "s1",
        pending_id="p1",
        questions=({"id": "x", "prompt": ""}, {"id": "db", "title": "Which database?"}),
    )
    assert text_of(fact, "http://x:1").startswith("Agent asks in Pick a database: Which database?")


def test_only_a_permission_request_s_body_and_line_carry_its_decision_link() -> None:
    asked = NotificationFact(
        PERMISSION_REQUESTED,
        "t1",
        "Ship it",
        "s1",
        message_id="m1",
        tool_call={"title": "Execute make", "kind": "execute"},
    )
    body = webhook_body(
        asked,
        delivery_id="d1",
        occurred_at=WHEN,
        base_url="http://x:1",
        decision_url="https://c.example/p/TOKEN",
    )
    assert body["decision_url"] == "https://c.example/p/TOKEN"
    assert body["text"] == (
        "Agent asks permission in Ship it: Execute make"
        " Decide: https://c.example/p/TOKEN Open: http://x:1/#/tasks/t1/sessions/s1"
    )
    assert wants_decision_url(asked)
    decided = NotificationFact(PERMISSION_DECIDED, "t1", "Ship it", "s1", message_id="m1")
    assert not wants_decision_url(decided)
    assert not wants_decision_url(_asked())
    plain = webhook_body(_asked(), delivery_id="d1", occurred_at=WHEN, base_url="http://x:1")
    assert "decision_url" not in plain
