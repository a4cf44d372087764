"""Validating and normalizing a respond body; its wire, tool-result and row encodings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clarion.domain.answers import (
    MAX_TEXT,
    response_from_wire,
    response_wire,
    tool_result_text,
    validate_response,
)
from clarion.domain.errors import InvalidInput
from clarion.domain.models import Answer, ClarificationResponse, Question

from .builders import at, question

TWO = (question("q1", "opt-a", "opt-b"), question("q2", "opt-c"))


def ans(question_id: Any = "q1", *selected: str, text: str = "") -> dict[str, Any]:
    return {"question_id": question_id, "selected_options": list(selected), "custom_text": text}


def both(**overrides: Any) -> dict[str, Any]:
    return {"answers": [ans("q1"), ans("q2")], "rejected": False, "reject_reason": ""} | overrides


def field_of(raw: object, questions: tuple[Question, ...] = TWO) -> str | None:
    with pytest.raises(InvalidInput) as caught:
        validate_response(raw, questions, "p1")
    assert caught.value.code == "invalid_response"
    return caught.value.field


def valid(raw: object, questions: tuple[Question, ...] = TWO) -> ClarificationResponse:
    return validate_response(raw, questions, "p1")


# ----------------------------------------------------------------- body shape


@pytest.mark.parametrize("raw", [None, [], "x", 1, True])
def test_a_body_that_is_not_an_object_is_rejected(raw: object) -> None:
    assert field_of(raw) is None


@pytest.mark.parametrize("value", ["true", 1, 0, "yes", []])
def test_rejected_must_be_a_boolean(value: object) -> None:
    assert field_of(both(rejected=value)) == "rejected"


@pytest.mark.parametrize("value", [1, ["x"], {"a": 1}, True])
def test_reject_reason_must_be_a_string(value: object) -> None:
    assert field_of(both(reject_reason=value)) == "reject_reason"


@pytest.mark.parametrize("value", ["q1", {"question_id": "q1"}, 3])
def test_answers_must_be_a_list(value: object) -> None:
    assert field_of(both(answers=value)) == "answers"


def test_an_answer_that_is_not_an_object_names_its_index() -> None:
    assert field_of(both(answers=[ans("q1"), "q2"])) == "answers[1]"


def test_selected_options_must_be_a_list() -> None:
    body = both(answers=[ans("q1"), {"question_id": "q2", "selected_options": "opt-c"}])
    assert field_of(body) == "answers[1].selected_options"


def test_a_non_string_option_names_its_index() -> None:
    body = both(answers=[{"question_id": "q1", "selected_options": ["opt-a", 2]}, ans("q2")])
    assert field_of(body) == "answers[0].selected_options[1]"


@pytest.mark.parametrize("value", [1, ["x"], False])
def test_custom_text_must_be_a_string(value: object) -> None:
    body = both(answers=[ans("q1"), {"question_id": "q2", "custom_text": value}])
    assert field_of(body) == "answers[1].custom_text"


def test_null_and_missing_optional_keys_read_as_empty() -> None:
    response = valid(
        {
            "answers": [
                {"question_id": "q1", "selected_options": None, "custom_text": None},
                {"question_id": "q2"},
            ],
            "rejected": None,
            "reject_reason": None,
        }
    )
    assert response.answers == (Answer("q1"), Answer("q2"))
    assert response.rejected is False


def test_unknown_keys_are_ignored() -> None:
    response = valid(both(extra=1, answers=[ans("q1") | {"x": 1}, ans("q2")]))
    assert [a.question_id for a in response.answers] == ["q1", "q2"]


# ----------------------------------------------------------------- kandev's outcome rules


def test_validate_outcome_wrong_count_is_rejected() -> None:
    assert field_of(both(answers=[ans("q1")])) == "answers"


def test_validate_outcome_no_answers_to_an_answered_bundle_is_rejected() -> None:
    assert field_of({"answers": []}) == "answers"
    assert field_of({}) == "answers"


def test_validate_outcome_empty_question_id_is_rejected() -> None:
    assert field_of(both(answers=[ans(""), ans("q2")])) == "answers[0].question_id"


def test_validate_outcome_missing_question_id_is_rejected() -> None:
    body = both(answers=[ans("q1"), {"selected_options": ["opt-c"]}])
    assert field_of(body) == "answers[1].question_id"


def test_validate_outcome_non_string_question_id_is_rejected() -> None:
    assert field_of(both(answers=[ans(1), ans("q2")])) == "answers[0].question_id"


def test_validate_outcome_unknown_question_id_is_rejected() -> None:
    assert field_of(both(answers=[ans("q1"), ans("not-in-bundle")])) == "answers[1].question_id"


def test_validate_outcome_duplicate_question_id_is_rejected() -> None:
    assert field_of(both(answers=[ans("q1"), ans("q1")])) == "answers[1].question_id"


def test_validate_outcome_extra_answer_is_rejected_at_the_extra_entry() -> None:
    assert field_of(both(answers=[ans("q1"), ans("q2"), ans("q2")])) == "answers[2].question_id"


def test_validate_outcome_empty_entry_is_accepted() -> None:
    response = valid(both())
    assert response.answers == (Answer("q1"), Answer("q2"))
    assert response.rejected is False


def test_validate_outcome_unknown_option_is_rejected() -> None:
    body = both(answers=[ans("q1", "not-an-option"), ans("q2")])
    assert field_of(body) == "answers[0].selected_options[0]"


def test_validate_outcome_option_of_another_question_is_rejected() -> None:
    body = both(answers=[ans("q1", "opt-a", "opt-c"), ans("q2")])
    assert field_of(body) == "answers[0].selected_options[1]"


def test_validate_outcome_several_valid_options_are_accepted() -> None:
    response = valid(both(answers=[ans("q1", "opt-a", "opt-b"), ans("q2")]))
    assert response.answers[0].selected_options == ("opt-a", "opt-b")


def test_validate_outcome_rejected_together_with_answers_is_rejected() -> None:
    assert field_of(both(rejected=True)) == "answers"


def test_validate_outcome_rejected_with_empty_or_missing_answers_is_accepted() -> None:
    for body in ({"rejected": True, "answers": []}, {"rejected": True}):
        response = valid(body)
        assert response.rejected is True
        assert response.answers == ()


def test_validate_outcome_rejection_keeps_its_trimmed_reason() -> None:
    response = valid({"rejected": True, "reject_reason": "  not needed \n"})
    assert response.reject_reason == "not needed"
    assert response.pending_id == "p1"
    assert response.responded_at is None


def test_validate_outcome_custom_text_over_cap_is_rejected() -> None:
    body = both(answers=[ans("q1", text="a" * (MAX_TEXT + 1)), ans("q2")])
    assert field_of(body) == "answers[0].custom_text"


def test_validate_outcome_reason_over_cap_is_rejected_in_code_points() -> None:
    assert field_of({"rejected": True, "reject_reason": "本" * (MAX_TEXT + 1)}) == "reject_reason"


def test_validate_outcome_reason_over_cap_is_rejected_on_an_answer_too() -> None:
    assert field_of(both(reject_reason="x" * (MAX_TEXT + 1))) == "reject_reason"


def test_validate_outcome_custom_text_at_cap_is_accepted_in_code_points() -> None:
    text = "本" * MAX_TEXT  # 6000 bytes in UTF-8: the cap counts characters, not bytes
    response = valid(both(answers=[ans("q1", text=text), ans("q2")]))
    assert response.answers[0].custom_text == text


def test_validate_outcome_reason_at_cap_is_accepted() -> None:
    response = valid({"rejected": True, "reject_reason": "本" * MAX_TEXT})
    assert len(response.reject_reason) == MAX_TEXT


def test_validate_outcome_caps_raw_text_before_trimming() -> None:
    over_only_with_spaces = "a" * (MAX_TEXT - 1) + "  "
    body = both(answers=[ans("q1", text=over_only_with_spaces), ans("q2")])
    assert field_of(body) == "answers[0].custom_text"


def test_validate_outcome_bundle_without_question_id_is_answerable_only_by_rejection() -> None:
    unnamed = (Question(id="", title="", prompt="?", options=()),)
    assert field_of({"answers": [ans("")]}, unnamed) == "answers[0].question_id"
    assert field_of({"answers": [ans("anything")]}, unnamed) == "answers[0].question_id"
    assert valid({"rejected": True}, unnamed).rejected is True


def test_validate_outcome_reports_the_first_bad_answer() -> None:
    body = both(answers=[ans("q1", "bad"), ans("nope")])
    assert field_of(body) == "answers[0].selected_options[0]"


def test_validate_outcome_error_message_names_the_field() -> None:
    with pytest.raises(InvalidInput, match=r"answers\[1\]\.question_id"):
        valid(both(answers=[ans("q1"), ans("zzz")]))


# ----------------------------------------------------------------- normalization


def test_normalize_answered_orders_by_bundle_question_order() -> None:
    response = valid(both(answers=[ans("q2", text="second"), ans("q1", text="first")]))
    assert [a.question_id for a in response.answers] == ["q1", "q2"]
    assert [a.custom_text for a in response.answers] == ["first", "second"]


def test_normalize_answered_orders_and_dedups_selected_options() -> None:
    qs = (question("q1", "opt-a", "opt-b", "opt-c"),)
    picked = ["opt-c", "opt-a", "opt-c", "opt-b", "opt-a"]
    response = valid({"answers": [ans("q1", *picked)]}, qs)
    assert response.answers[0].selected_options == ("opt-a", "opt-b", "opt-c")


def test_normalize_answered_trims_whitespace_but_keeps_inner_spacing() -> None:
    qs = (question("q1", "a", "b"),)
    response = valid({"answers": [ans("q1", text="  padded  inside stays \n")]}, qs)
    assert response.answers[0].custom_text == "padded  inside stays"


def test_normalize_answered_drops_the_reason_of_an_answer() -> None:
    response = valid(both(reject_reason="stray"))
    assert response.reject_reason == ""


def test_normalize_answered_is_identical_for_equivalent_submissions() -> None:
    a = valid(both(answers=[ans("q1", "opt-b", "opt-a"), ans("q2", text=" x ")]))
    b = valid(
        both(answers=[ans("q2", text="x"), ans("q1", "opt-a", "opt-b", "opt-a")], reject_reason="r")
    )
    assert a == b
    assert json.dumps(response_wire(a)) == json.dumps(response_wire(b))


# ----------------------------------------------------------------- wire shape


ANSWERED = ClarificationResponse(
    pending_id="p1",
    answers=(Answer("q1", ("opt-a",), ""), Answer("q2", (), "free text")),
    rejected=False,
    responded_at=at(5),
)
REJECTED = ClarificationResponse(
    pending_id="p1", answers=(), rejected=True, reject_reason="User skipped", responded_at=at(5)
)


def test_serialize_response_answered_never_omits_keys() -> None:
    assert response_wire(ANSWERED) == {
        "pending_id": "p1",
        "answers": [
            {"question_id": "q1", "selected_options": ["opt-a"], "custom_text": ""},
            {"question_id": "q2", "selected_options": [], "custom_text": "free text"},
        ],
        "rejected": False,
        "reject_reason": "",
        "responded_at": "2026-01-01T00:00:05+00:00",
    }


def test_serialize_response_rejected_never_omits_answers_key() -> None:
    wire = response_wire(REJECTED)
    assert wire["answers"] == []
    assert wire["rejected"] is True
    assert wire["reject_reason"] == "User skipped"


def test_serialize_response_without_time_has_null_responded_at() -> None:
    unclaimed = ClarificationResponse(pending_id="p1", answers=(), rejected=True)
    assert response_wire(unclaimed)["responded_at"] is None


@pytest.mark.parametrize("response", [ANSWERED, REJECTED])
def test_serialize_response_round_trips_through_json(response: ClarificationResponse) -> None:
    wire = json.loads(json.dumps(response_wire(response)))
    assert response_from_wire(wire) == response


def test_serialize_response_round_trip_keeps_a_missing_time_missing() -> None:
    unclaimed = ClarificationResponse(pending_id="p1", answers=(Answer("q1"),), rejected=False)
    assert response_from_wire(response_wire(unclaimed)) == unclaimed


# ----------------------------------------------------------------- tool result


def test_tool_result_of_an_answer_is_json_keyed_by_question_id() -> None:
    response = ClarificationResponse(
        pending_id="p1", answers=(Answer("db", ("postgres",), ""),), rejected=False
    )
    assert tool_result_text(response) == (
        '{"db": {"selected_options": ["postgres"], "custom_text": ""}}'
    )


def test_tool_result_keeps_question_order_and_every_key() -> None:
    assert json.loads(tool_result_text(ANSWERED)) == {
        "q1": {"selected_options": ["opt-a"], "custom_text": ""},
        "q2": {"selected_options": [], "custom_text": "free text"},
    }
    assert list(json.loads(tool_result_text(ANSWERED))) == ["q1", "q2"]


def test_tool_result_of_a_rejection_is_the_rejection_envelope() -> None:
    assert json.loads(tool_result_text(REJECTED)) == {
        "rejected": True,
        "reject_reason": "User skipped",
    }


def test_tool_result_keeps_non_ascii_text_readable() -> None:
    response = ClarificationResponse(
        pending_id="p1", answers=(Answer("q", (), "日本語"),), rejected=False
    )
    assert "日本語" in tool_result_text(response)
