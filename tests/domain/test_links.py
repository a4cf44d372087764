"""Answer-link tokens: signed, naming one pending id, expiring; anything else reads as None."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from clarion.domain.links import ANSWER, DECISION, answer_url, decision_url, sign, verify
from clarion.domain.notification_events import EVENTS, NotificationFact, wants_answer_url

KEY = b"k" * 32
NOW = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
PENDING = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def test_a_signed_token_names_its_pending_id_until_it_expires() -> None:
    token = sign(KEY, PENDING, NOW + timedelta(days=7))
    assert verify(KEY, token, NOW) == PENDING
    assert verify(KEY, token, NOW + timedelta(days=7) - timedelta(seconds=1)) == PENDING
    assert verify(KEY, token, NOW + timedelta(days=7)) is None


def test_a_token_signed_with_another_key_is_refused() -> None:
    token = sign(b"other key", PENDING, NOW + timedelta(days=1))
    assert verify(KEY, token, NOW) is None


def test_an_altered_payload_is_refused_even_with_the_old_mac() -> None:
    token = sign(KEY, PENDING, NOW + timedelta(days=1))
    _, mac = token.split(".")
    forged_payload = base64.urlsafe_b64encode(f"{PENDING[:-1]}c.9999999999".encode())
    forged = forged_payload.rstrip(b"=").decode() + "." + mac
    assert verify(KEY, forged, NOW) is None
    # A later expiry with the same pending id is an alteration too.
    longer = base64.urlsafe_b64encode(f"{PENDING}.9999999999".encode()).rstrip(b"=").decode()
    assert verify(KEY, f"{longer}.{mac}", NOW) is None


@pytest.mark.parametrize(
    "garbage",
    ["", ".", "a.b.c", "not-base64!.x", "x" * 600, "abc", "%%%.%%%", "YQ.YQ"],
)
def test_garbage_is_refused(garbage: str) -> None:
    assert verify(KEY, garbage, NOW) is None


def test_every_flipped_character_is_refused() -> None:
    token = sign(KEY, PENDING, NOW + timedelta(days=1))
    for i, ch in enumerate(token):
        if ch == ".":
            continue
        swapped = token[:i] + ("A" if ch != "A" else "B") + token[i + 1 :]
        assert verify(KEY, swapped, NOW) is None, i


def test_a_pending_id_with_unexpected_characters_cannot_be_signed() -> None:
    with pytest.raises(ValueError, match="not a pending id"):
        sign(KEY, "a.b", NOW)


def test_the_answer_url_puts_the_token_under_a() -> None:
    assert answer_url("https://c.example/", "T.M") == "https://c.example/a/T.M"


def test_only_events_whose_question_is_still_open_carry_the_answer_link() -> None:
    def fact(event: str) -> NotificationFact:
        return NotificationFact(
            event=event, task_id="t", task_title="", session_id="s", pending_id="p"
        )

    carrying = {event for event in EVENTS if wants_answer_url(fact(event))}
    assert carrying == {
        "clarification.requested",
        "clarification.detached",
        "clarification.reminder",
        "clarification.escalated",
    }


@pytest.mark.parametrize("payload", [b"not a pending id.4102444800", b"p1.tomorrow"])
def test_a_correctly_signed_but_malformed_payload_is_refused(payload: bytes) -> None:
    import hashlib
    import hmac

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    secret = b"k" * 32
    token = f"{b64(payload)}.{b64(hmac.new(secret, payload, hashlib.sha256).digest())}"
    assert verify(secret, token, datetime(2026, 1, 1, tzinfo=UTC)) is None


def test_a_decision_token_names_its_permission_request_until_it_expires() -> None:
    token = sign(KEY, PENDING, NOW + timedelta(days=7), DECISION)
    assert verify(KEY, token, NOW, DECISION) == PENDING
    assert verify(KEY, token, NOW + timedelta(days=7), DECISION) is None
    assert decision_url("https://c.example/", token) == f"https://c.example/p/{token}"


def test_a_question_token_never_decides_a_permission_and_a_decision_token_never_answers() -> None:
    answer = sign(KEY, PENDING, NOW + timedelta(days=1))
    decision = sign(KEY, PENDING, NOW + timedelta(days=1), DECISION)
    assert answer != decision
    assert verify(KEY, answer, NOW, DECISION) is None
    assert verify(KEY, decision, NOW) is None
    assert verify(KEY, decision, NOW, ANSWER) is None


def test_an_unknown_purpose_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="not a link purpose"):
        sign(KEY, PENDING, NOW, "delete")
