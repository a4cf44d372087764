"""The resume prompt and the detached tool error."""

from __future__ import annotations

from clarion.domain.models import Answer, ClarificationResponse
from clarion.domain.prompts import DETACHED_TOOL_ERROR, resume_prompt

from .builders import question

DB = question(
    "db",
    ("postgres", "PostgreSQL"),
    ("mongodb", "MongoDB"),
    ("sqlite", "SQLite"),
    prompt="Which database should we use?",
)
LANG = question("language", ("python", "Python"), ("go", "Go"), prompt="Which language?")
DEPLOY = question(
    "deploy", ("docker", "Docker"), ("bare-metal", "Bare metal"), prompt="Deploy how?"
)


def answered(*answers: Answer) -> ClarificationResponse:
    return ClarificationResponse(pending_id="p1", answers=answers, rejected=False)


def test_single_question_prompt_quotes_the_question_and_names_the_label() -> None:
    text = resume_prompt([DB], answered(Answer("db", ("postgres",))))
    assert text == (
        'You previously asked the user: "Which database should we use?"\n'
        "User selected: PostgreSQL\n"
        "Please continue with this information."
    )


def test_single_question_prompt_carries_several_labels_in_order() -> None:
    text = resume_prompt([DB], answered(Answer("db", ("postgres", "sqlite"))))
    assert "User selected: PostgreSQL, SQLite\n" in text


def test_single_question_prompt_carries_custom_text() -> None:
    text = resume_prompt([DB], answered(Answer("db", (), "Use DuckDB")))
    assert text.splitlines()[1] == "User answered: Use DuckDB"


def test_single_question_prompt_carries_labels_and_custom_text_together() -> None:
    text = resume_prompt([DB], answered(Answer("db", ("sqlite",), "for tests only")))
    lines = text.splitlines()
    assert lines[1:3] == ["User selected: SQLite", "User answered: for tests only"]


def test_an_empty_answer_says_no_specific_answer() -> None:
    text = resume_prompt([DB], answered(Answer("db")))
    assert "User provided no specific answer." in text
    assert resume_prompt([DB], answered()).count("no specific answer") == 1


def test_an_option_without_a_known_label_falls_back_to_its_id() -> None:
    text = resume_prompt([DB], answered(Answer("db", ("legacy",))))
    assert "User selected: legacy" in text


def test_multi_question_prompt_lists_questions_then_answers() -> None:
    text = resume_prompt(
        [DB, LANG, DEPLOY],
        answered(
            Answer("db", ("postgres",)),
            Answer("language", (), "Rust, actually"),
            Answer("deploy", ("docker",), "with compose"),
        ),
    )
    assert text == (
        "You previously asked the user:\n"
        "Q1: Which database should we use?\n"
        "Q2: Which language?\n"
        "Q3: Deploy how?\n"
        "\n"
        "A1: PostgreSQL\n"
        "A2: Rust, actually\n"
        "A3: Docker; with compose\n"
        "Please continue with this information."
    )


def test_multi_question_prompt_matches_answers_by_question_id_not_position() -> None:
    text = resume_prompt(
        [DB, LANG], answered(Answer("language", ("go",)), Answer("db", ("sqlite",)))
    )
    assert "A1: SQLite\nA2: Go\n" in text


def test_multi_question_prompt_marks_a_missing_or_empty_answer() -> None:
    text = resume_prompt([DB, LANG], answered(Answer("db")))
    assert "A1: (no answer)\nA2: (no answer)\n" in text


def test_every_resume_prompt_has_the_contract_prefix_and_suffix() -> None:
    for questions in ([DB], [DB, LANG]):
        text = resume_prompt(questions, answered(Answer("db", ("mongodb",))))
        assert text.startswith("You previously asked the user:")
        assert text.endswith("Please continue with this information.")
        assert "MongoDB" in text
        for q in questions:
            assert q.prompt in text


def test_the_prompt_text_is_carried_verbatim_even_with_quotes_and_newlines() -> None:
    tricky = question("q", "a", "b", prompt='Say "hi"\nthen what?')
    assert 'Say "hi"\nthen what?' in resume_prompt([tricky], answered(Answer("q", ("a",))))


def test_the_detached_tool_error_says_open_end_turn_and_new_prompt() -> None:
    text = DETACHED_TOOL_ERROR.lower()
    assert "stays open" in text
    assert "end your turn" in text
    assert "new prompt" in text
