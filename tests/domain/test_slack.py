"""The Slack side of a question as data: the outbox body, what each button carries and the
answer it gives, a submitted modal's respond body and its errors, and the outcome line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from clarion.domain.bundles import answered_by
from clarion.domain.lifecycle import claim_values
from clarion.domain.models import Answer, BundleState, ClarificationResponse
from clarion.domain.notification_events import (
    CLARIFICATION_REQUESTED,
    PERMISSION_REQUESTED,
    NotificationFact,
)
from clarion.domain.slack import (
    OPEN_ACTION,
    OPTION_ACTION,
    SKIP_ACTION,
    Click,
    button_value,
    click_body,
    click_of,
    modal_body,
    outcome_line,
    slack_body,
)
from clarion.slack.poster import _line as slack_line

from .builders import PENDING_ID, bundle, question, question_meta, row


def test_the_outbox_body_keeps_what_the_message_is_built_from() -> None:
    fact = NotificationFact(
        CLARIFICATION_REQUESTED,
        "t1",
        "Billing",
        "s1",
        pending_id="p1",
        questions=({"id": "db", "prompt": "Which database?"},),
    )
    body = json.loads(slack_body(fact, link="http://x/#/t", answer_url="http://x/a/k", context="c"))
    assert body["task"] == {"id": "t1", "title": "Billing"}
    assert (body["pending_id"], body["context"], body["answer_url"]) == ("p1", "c", "http://x/a/k")
    assert body["questions"] == [{"id": "db", "prompt": "Which database?"}]
    assert body["text"] == "Agent asks in Billing: Which database?"


def test_a_permission_request_s_slack_line_links_its_decision_page() -> None:
    fact = NotificationFact(
        PERMISSION_REQUESTED, "t1", "Billing", "s1", message_id="m1", tool_call={"title": "Run"}
    )
    stored = slack_body(
        fact, link="http://x/#/t", answer_url=None, context="", decision_url="http://x/p/k"
    )
    assert json.loads(stored)["decision_url"] == "http://x/p/k"
    assert slack_line(json.loads(stored)) == (
        "Agent asks permission in Billing: Run <http://x/p/k|Decide>"
    )


def _action(action_id: str, value: Any) -> dict[str, Any]:
    return {"action_id": action_id, "value": value if isinstance(value, str) else json.dumps(value)}


def test_each_button_decodes_to_the_click_it_was_posted_as() -> None:
    option = click_of(_action(f"{OPTION_ACTION}_2", button_value("p1", "db", "pg")))
    assert option == Click(OPTION_ACTION, "p1", "db", "pg")
    assert click_of(_action(SKIP_ACTION, button_value("p1"))) == Click(SKIP_ACTION, "p1")
    assert click_of(_action(OPEN_ACTION, button_value("p1"))) == Click(OPEN_ACTION, "p1")


@pytest.mark.parametrize(
    "action",
    [
        _action("someone_elses_button", button_value("p1")),
        _action(SKIP_ACTION, "{not json"),
        _action(SKIP_ACTION, ["p1"]),
        _action(SKIP_ACTION, {"p": ""}),
        _action(f"{OPTION_ACTION}_0", {"p": "p1", "q": "db"}),
        {"action_id": SKIP_ACTION},
    ],
)
def test_a_button_clarion_did_not_post_decodes_to_nothing(action: dict[str, Any]) -> None:
    assert click_of(action) is None


def test_an_option_click_answers_its_question_and_skip_rejects_naming_the_person() -> None:
    assert click_body(Click(OPTION_ACTION, "p1", "db", "pg"), "alice") == {
        "answers": [{"question_id": "db", "selected_options": ["pg"]}]
    }
    assert click_body(Click(SKIP_ACTION, "p1"), "alice") == {
        "rejected": True,
        "reject_reason": "Skipped in Slack by alice",
    }


def test_a_submitted_modal_gives_each_questions_option_and_text() -> None:
    values: dict[str, dict[str, Any]] = {
        "q0_options": {"options": {"selected_option": {"value": "pg"}}},
        "q1_options": {"options": {"selected_options": [{"value": "go"}, {"value": "rust"}]}},
        "q1_text": {"text": {"value": "  fast  "}},
        "q2_text": {"text": {"value": "Kubernetes"}},
    }
    body, errors = modal_body(["db", "lang", "deploy"], values)
    assert errors == {}
    assert body["answers"] == [
        {"question_id": "db", "selected_options": ["pg"], "custom_text": ""},
        {"question_id": "lang", "selected_options": ["go", "rust"], "custom_text": "fast"},
        {"question_id": "deploy", "selected_options": [], "custom_text": "Kubernetes"},
    ]


def test_a_modal_question_left_empty_is_an_error_under_its_text_field() -> None:
    values: dict[str, dict[str, Any]] = {
        "q0_options": {"options": "not an element"},
        "q0_text": {"text": "not an element"},
        "q1_options": {"options": {"selected_option": None}},
    }
    _, errors = modal_body(["db", "lang"], values)
    assert errors == {
        "q0_text": "Choose an option or write an answer.",
        "q1_text": "Choose an option or write an answer.",
    }


DB = question("db", ("pg", "PostgreSQL"), ("lite", "SQLite"))
LANG = question("lang", ("go", "Go"))


def _answered(**meta: Any) -> Any:
    return bundle(
        row(
            "m1",
            question_id="db",
            question=question_meta(DB),
            status="answered",
            response={"question_id": "db", "selected_options": ["pg"], "custom_text": ""},
            **meta,
        ),
        row(
            "m2",
            index=1,
            question_id="lang",
            question=question_meta(LANG),
            status="answered",
            response={"question_id": "lang", "selected_options": [], "custom_text": "Zig"},
            **meta,
        ),
    )


def _response(*answers: Answer, rejected: bool = False, reason: str = "") -> ClarificationResponse:
    return ClarificationResponse(
        PENDING_ID, answers, rejected, reason, datetime(2026, 1, 1, tzinfo=UTC)
    )


def test_the_outcome_line_names_the_answer_and_who_gave_it() -> None:
    b = _answered()
    answer = _response(Answer("db", ("pg",)), Answer("lang", (), "Zig"))
    assert outcome_line(b, BundleState.TERMINAL, answer, "alice") == (
        "Answered by alice: PostgreSQL; “Zig”"
    )
    assert outcome_line(b, BundleState.TERMINAL, _response(Answer("db")), None) == (
        "Answered in Clarion"
    )
    unknown = _response(Answer("gone", ("x",)))
    assert outcome_line(b, BundleState.TERMINAL, unknown, None) == "Answered in Clarion: x"


def test_the_outcome_line_of_a_skip_a_superseded_and_a_closed_question() -> None:
    b = _answered()
    skipped = _response(rejected=True, reason="No answer within 30m")
    assert outcome_line(b, BundleState.TERMINAL, skipped, "the waiting policy") == (
        "Skipped by the waiting policy: No answer within 30m"
    )
    assert (
        outcome_line(b, BundleState.TERMINAL, _response(rejected=True), "bob") == "Skipped by bob"
    )
    assert outcome_line(b, BundleState.SUPERSEDED_HISTORY, None, None) == (
        "No longer asked: the agent moved on"
    )
    assert outcome_line(b, BundleState.TERMINAL, None, None).startswith("Closed without an answer")


def test_a_named_answer_records_the_person_and_answered_by_reads_it_back() -> None:
    named = ClarificationResponse(PENDING_ID, (Answer("db", ("pg",)),), False, answered_by="alice")
    values = claim_values(row("m1", question_id="db", question=question_meta(DB)), named)
    assert values["answered_by"] == "alice"
    rejected = ClarificationResponse(PENDING_ID, (), True, "no", answered_by="alice")
    assert claim_values(row("m1", question_id="db"), rejected)["answered_by"] == "alice"
    anonymous = ClarificationResponse(PENDING_ID, (Answer("db", ("pg",)),), False)
    assert "answered_by" not in claim_values(row("m1", question_id="db"), anonymous)
    assert answered_by(_answered(answered_by="alice")) == "alice"
    assert answered_by(_answered()) == "person"
    assert answered_by(_answered(answered_by="policy")) == "policy"
