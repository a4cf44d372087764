"""Parsing and validating the `ask_user_question` input; the rows a bundle is written as."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.domain.errors import InvalidInput
from clarion.domain.models import Question, QuestionOption
from clarion.domain.questions import bundle_row_metadata, parse_ask, question_wire


def opts(n: int) -> list[dict[str, Any]]:
    return [{"label": f"Option {m}"} for m in range(1, n + 1)]


def q(**fields: Any) -> dict[str, Any]:
    return {"prompt": "Which?", "options": opts(2)} | fields


def field_of(raw: object) -> str | None:
    with pytest.raises(InvalidInput) as caught:
        parse_ask(raw)
    assert caught.value.code == "invalid_request"
    return caught.value.field


# ----------------------------------------------------------------- accepted input


def test_the_builtin_ask_scenario_input_parses_with_its_own_ids() -> None:
    questions, context = parse_ask(
        {
            "questions": [
                {
                    "id": "db",
                    "title": "Database",
                    "prompt": "Which database?",
                    "options": [
                        {"option_id": "postgres", "label": "PostgreSQL", "description": "SQL"},
                        {"option_id": "mongodb", "label": "MongoDB"},
                        {"option_id": "sqlite", "label": "SQLite"},
                    ],
                }
            ]
        }
    )
    assert questions == (
        Question(
            id="db",
            title="Database",
            prompt="Which database?",
            options=(
                QuestionOption("postgres", "PostgreSQL", "SQL"),
                QuestionOption("mongodb", "MongoDB", ""),
                QuestionOption("sqlite", "SQLite", ""),
            ),
        ),
    )
    assert context == ""


def test_missing_ids_default_to_question_and_option_positions() -> None:
    questions, _ = parse_ask({"questions": [q(), q(id="named")]})
    assert [x.id for x in questions] == ["q1", "named"]
    assert [o.option_id for o in questions[0].options] == ["q1_opt1", "q1_opt2"]
    # Option defaults follow the question's position, not its id (kandev's rule).
    assert [o.option_id for o in questions[1].options] == ["q2_opt1", "q2_opt2"]


def test_blank_or_null_ids_get_the_defaults_too() -> None:
    options = [{"label": "A", "option_id": "  "}, {"label": "B", "option_id": None}]
    questions, _ = parse_ask({"questions": [q(id="  ", options=options)]})
    assert questions[0].id == "q1"
    assert [o.option_id for o in questions[0].options] == ["q1_opt1", "q1_opt2"]


def test_explicit_and_default_option_ids_mix() -> None:
    questions, _ = parse_ask(
        {"questions": [q(options=[{"label": "A", "option_id": "a"}, {"label": "B"}])]}
    )
    assert [o.option_id for o in questions[0].options] == ["a", "q1_opt2"]


def test_strings_are_trimmed() -> None:
    raw = {
        "questions": [
            {
                "id": " db ",
                "title": " T ",
                "prompt": "  Which?\n",
                "options": [
                    {"label": " A ", "description": " d ", "option_id": " a "},
                    {"label": "B"},
                ],
            }
        ],
        "context": "  ctx  ",
    }
    questions, context = parse_ask(raw)
    assert questions[0] == Question(
        id="db",
        title="T",
        prompt="Which?",
        options=(QuestionOption("a", "A", "d"), QuestionOption("q1_opt2", "B", "")),
    )
    assert context == "ctx"


def test_optional_fields_may_be_null() -> None:
    options = [{"label": "A", "description": None}, {"label": "B"}]
    raw = {"questions": [q(title=None, options=options)], "context": None}
    questions, context = parse_ask(raw)
    assert questions[0].title == ""
    assert questions[0].options[0].description == ""
    assert context == ""


@pytest.mark.parametrize("count", [1, 4])
def test_one_to_four_questions_are_accepted(count: int) -> None:
    questions, _ = parse_ask({"questions": [q() for _ in range(count)]})
    assert [x.id for x in questions] == [f"q{n}" for n in range(1, count + 1)]


@pytest.mark.parametrize("count", [2, 6])
def test_two_to_six_options_are_accepted(count: int) -> None:
    questions, _ = parse_ask({"questions": [q(options=opts(count))]})
    assert len(questions[0].options) == count


def test_context_paragraphs_join_with_a_blank_line_and_override_context() -> None:
    _, context = parse_ask(
        {"questions": [q()], "context": "ignored", "context_paragraphs": [" One. ", "Two."]}
    )
    assert context == "One.\n\nTwo."


def test_blank_context_paragraphs_are_dropped() -> None:
    _, context = parse_ask({"questions": [q()], "context_paragraphs": ["One.", "  ", "Two."]})
    assert context == "One.\n\nTwo."


def test_null_context_paragraphs_fall_back_to_context() -> None:
    _, context = parse_ask({"questions": [q()], "context": "c", "context_paragraphs": None})
    assert context == "c"


def test_unknown_keys_are_ignored() -> None:
    questions, _ = parse_ask({"questions": [q(extra=1)], "other": True})
    assert questions[0].id == "q1"


# ----------------------------------------------------------------- rejected input


@pytest.mark.parametrize("raw", [None, [], "questions", 3])
def test_arguments_that_are_not_an_object_are_rejected(raw: object) -> None:
    assert field_of(raw) is None


@pytest.mark.parametrize("questions", [None, "q", {"prompt": "x"}, 1])
def test_questions_must_be_a_list(questions: object) -> None:
    raw: dict[str, Any] = {} if questions is None else {"questions": questions}
    assert field_of(raw) == "questions"


@pytest.mark.parametrize("count", [0, 5])
def test_question_count_out_of_range_is_rejected(count: int) -> None:
    assert field_of({"questions": [q() for _ in range(count)]}) == "questions"


def test_a_question_that_is_not_an_object_names_its_index() -> None:
    assert field_of({"questions": [q(), "text"]}) == "questions[1]"


@pytest.mark.parametrize("prompt", [None, "", "   ", 7])
def test_missing_empty_or_non_string_prompt_is_rejected(prompt: object) -> None:
    raw_q = q(prompt=prompt) if prompt is not None else {"options": opts(2)}
    assert field_of({"questions": [q(), raw_q]}) == "questions[1].prompt"


@pytest.mark.parametrize(("key", "value"), [("id", 3), ("title", ["x"])])
def test_non_string_id_or_title_is_rejected(key: str, value: object) -> None:
    assert field_of({"questions": [q(**{key: value})]}) == f"questions[0].{key}"


@pytest.mark.parametrize("options", [None, "a,b", {"label": "A"}])
def test_options_must_be_a_list(options: object) -> None:
    raw_q = q(options=options) if options is not None else {"prompt": "Which?"}
    assert field_of({"questions": [raw_q]}) == "questions[0].options"


@pytest.mark.parametrize("count", [0, 1, 7])
def test_option_count_out_of_range_is_rejected(count: int) -> None:
    assert field_of({"questions": [q(), q(options=opts(count))]}) == "questions[1].options"


def test_an_option_that_is_not_an_object_names_its_index() -> None:
    assert field_of({"questions": [q(options=[{"label": "A"}, "B"])]}) == "questions[0].options[1]"


@pytest.mark.parametrize("label", [None, "", "  ", 1])
def test_missing_empty_or_non_string_label_is_rejected(label: object) -> None:
    option: dict[str, Any] = {} if label is None else {"label": label}
    raw = {"questions": [q(options=[{"label": "A"}, option])]}
    assert field_of(raw) == "questions[0].options[1].label"


@pytest.mark.parametrize("key", ["description", "option_id"])
def test_non_string_option_fields_are_rejected(key: str) -> None:
    raw = {"questions": [q(options=[{"label": "A", key: 5}, {"label": "B"}])]}
    assert field_of(raw) == f"questions[0].options[0].{key}"


def test_duplicate_question_ids_are_rejected_at_the_second() -> None:
    assert field_of({"questions": [q(id="a"), q(id="b"), q(id="a")]}) == "questions[2].id"


def test_an_explicit_id_colliding_with_a_default_is_rejected() -> None:
    assert field_of({"questions": [q(id="q2"), q()]}) == "questions[1].id"


def test_duplicate_option_ids_within_a_question_are_rejected() -> None:
    options = [{"label": "A", "option_id": "x"}, {"label": "B", "option_id": "x"}]
    assert field_of({"questions": [q(options=options)]}) == "questions[0].options[1].option_id"


def test_an_explicit_option_id_colliding_with_a_default_is_rejected() -> None:
    options = [{"label": "A", "option_id": "q1_opt2"}, {"label": "B"}]
    assert field_of({"questions": [q(options=options)]}) == "questions[0].options[1].option_id"


def test_the_same_option_id_in_different_questions_is_fine() -> None:
    options = [{"label": "A", "option_id": "yes"}, {"label": "B", "option_id": "no"}]
    questions, _ = parse_ask({"questions": [q(options=options), q(options=options)]})
    assert [o.option_id for o in questions[1].options] == ["yes", "no"]


@pytest.mark.parametrize("context", [1, ["a"], {"a": 1}])
def test_non_string_context_is_rejected(context: object) -> None:
    assert field_of({"questions": [q()], "context": context}) == "context"


def test_context_paragraphs_must_be_a_list() -> None:
    assert field_of({"questions": [q()], "context_paragraphs": "text"}) == "context_paragraphs"


def test_a_non_string_context_paragraph_names_its_index() -> None:
    raw = {"questions": [q()], "context_paragraphs": ["a", 2]}
    assert field_of(raw) == "context_paragraphs[1]"


def test_the_first_bad_question_is_reported() -> None:
    raw = {"questions": [q(prompt=""), q(options=opts(1))]}
    assert field_of(raw) == "questions[0].prompt"


def test_the_error_message_names_the_field() -> None:
    with pytest.raises(InvalidInput, match=r"questions\[0\]\.options"):
        parse_ask({"questions": [q(options=opts(9))]})


# ----------------------------------------------------------------- row metadata


def test_bundle_row_metadata_carries_kandevs_keys_for_each_question() -> None:
    questions, context = parse_ask(
        {
            "questions": [
                q(
                    id="db",
                    title="DB",
                    options=[
                        {"label": "PG", "option_id": "pg"},
                        {"label": "Lite", "description": "small"},
                    ],
                ),
                q(id="lang"),
            ],
            "context": "We are choosing a stack.",
        }
    )
    rows = bundle_row_metadata("pid", questions, context)
    assert rows[0] == {
        "pending_id": "pid",
        "question_id": "db",
        "question": {
            "id": "db",
            "title": "DB",
            "prompt": "Which?",
            "options": [
                {"option_id": "pg", "label": "PG", "description": ""},
                {"option_id": "q1_opt2", "label": "Lite", "description": "small"},
            ],
        },
        "question_index": 0,
        "question_total": 2,
        "context": "We are choosing a stack.",
        "status": "pending",
    }
    assert rows[1]["question_id"] == "lang"
    assert rows[1]["question_index"] == 1
    assert rows[1]["question_total"] == 2
    assert rows[1]["context"] == "We are choosing a stack."


def test_question_wire_round_trips_through_parse() -> None:
    questions, _ = parse_ask({"questions": [q(id="x", title="t")]})
    wire = question_wire(questions[0])
    again, _ = parse_ask({"questions": [wire]})
    assert again == questions


def test_row_metadata_values_are_plain_json_types() -> None:
    questions, _ = parse_ask({"questions": [q()]})
    (meta,) = bundle_row_metadata("pid", questions, "")
    assert type(meta["status"]) is str
    assert all(type(k) is str for k in meta)


# ----------------------------------------------------------------- default options


def test_an_option_marked_default_is_kept_and_shown() -> None:
    questions, _ = parse_ask(
        {"questions": [q(options=[{"label": "A"}, {"label": "B", "default": True}])]}
    )
    assert [o.default for o in questions[0].options] == [False, True]
    wire = question_wire(questions[0])
    assert "default" not in wire["options"][0] and wire["options"][1]["default"] is True


def test_two_defaults_in_one_question_are_refused() -> None:
    both = [{"label": "A", "default": True}, {"label": "B", "default": True}]
    assert field_of({"questions": [q(options=both)]}) == "questions[0].options[1].default"


def test_a_default_that_is_not_a_boolean_is_refused() -> None:
    odd = [{"label": "A", "default": "yes"}, {"label": "B"}]
    assert field_of({"questions": [q(options=odd)]}) == "questions[0].options[0].default"


def test_a_null_default_means_not_the_default() -> None:
    questions, _ = parse_ask(
        {"questions": [q(options=[{"label": "A", "default": None}, {"label": "B"}])]}
    )
    assert [o.default for o in questions[0].options] == [False, False]
