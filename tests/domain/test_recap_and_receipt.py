"""The recap a restarted agent gets when it cannot load its session, and how a bundle records
whether its answer reached the agent."""

from __future__ import annotations

from dataclasses import replace

from clarion.domain.bundles import receipt_of, resend_in_flight
from clarion.domain.models import AuthorType, MessageType, Receipt
from clarion.domain.prompts import (
    RECAP_FOOTER,
    RECAP_HEADER,
    RecapEntry,
    recap,
    recap_after,
    recap_entries,
    with_recap,
)

from .builders import bundle, question, question_meta, row

DB = question("db", ("postgres", "PostgreSQL"), ("sqlite", "SQLite"), prompt="Which database?")


def _said(message_id: str, author: AuthorType, text: str, created: float) -> object:
    return replace(
        row(message_id, type=MessageType.MESSAGE, content=text, created=created),
        author_type=author,
    )


def test_recap_carries_prompts_replies_and_answered_questions_in_order() -> None:
    asked = row(
        "q",
        content="Which database?",
        created=2,
        question=question_meta(DB),
        response={"question_id": "db", "selected_options": ["sqlite"], "custom_text": "small"},
    )
    messages = [
        _said("u", AuthorType.USER, "Build the service", 0),
        _said("a", AuthorType.AGENT, "On it", 1),
        asked,
        replace(row("t", type=MessageType.THOUGHT, content="hmm", created=3)),
    ]

    text = recap(recap_entries(messages))  # type: ignore[arg-type]

    assert text.splitlines() == [
        RECAP_HEADER,
        "User: Build the service",
        "Agent: On it",
        "Agent asked: Which database?",
        "User answered: SQLite; small",
        RECAP_FOOTER,
    ]


def test_recap_keeps_the_newest_lines_within_its_bound_and_says_what_it_left_out() -> None:
    entries = [RecapEntry("user", f"prompt number {n}") for n in range(100)]
    text = recap(entries, max_chars=200)
    lines = text.splitlines()
    assert len(text) < 400
    assert lines[-2] == "User: prompt number 99"
    assert lines[1].startswith("(") and "earlier messages omitted" in lines[1]
    assert "prompt number 0\n" not in text


def test_long_entries_are_cut_and_an_empty_transcript_makes_no_recap() -> None:
    text = recap([RecapEntry("agent", "x" * 5000)])
    assert max(len(line) for line in text.splitlines()) < 700
    assert recap([]) == ""
    assert with_recap("", "prompt") == "prompt"
    assert with_recap("R", "prompt") == "R\n\nprompt"
    assert recap_after("", "prompt") == "prompt"
    assert recap_after("R", "prompt") == "prompt\n\nR"


def test_delivery_reads_ambiguous_until_a_resend_settles_it() -> None:
    assert receipt_of(bundle(row("a", status="pending"))) is None
    delivered = bundle(row("a", status="answered", delivery="delivered"))
    assert receipt_of(delivered) is Receipt.DELIVERED
    mixed = bundle(
        row("a", status="answered", delivery="delivered"),
        row("b", index=1, status="answered", delivery="ambiguous"),
    )
    assert receipt_of(mixed) is Receipt.AMBIGUOUS
    assert not resend_in_flight(mixed)
    assert resend_in_flight(bundle(row("a", delivery="ambiguous", resend_pending=True)))


def test_a_claim_writes_each_rows_own_answer_or_the_rejection() -> None:
    from clarion.domain.lifecycle import claim_values
    from clarion.domain.models import Answer, ClarificationResponse

    answered = ClarificationResponse(
        pending_id="p",
        answers=(Answer("db", ("sqlite",), "small"), Answer("lang", ("go",))),
        rejected=False,
    )
    db_row = row("a", question_id="db")
    unanswered = row("b", question_id="deploy")
    assert claim_values(db_row, answered) == {
        "status": "answered",
        "response": {"question_id": "db", "selected_options": ["sqlite"], "custom_text": "small"},
    }
    assert claim_values(unanswered, answered)["response"]["selected_options"] == []
    skipped = ClarificationResponse(pending_id="p", answers=(), rejected=True, reject_reason="no")
    assert claim_values(db_row, skipped) == {"status": "rejected", "reject_reason": "no"}


def test_a_question_not_yet_answered_is_recapped_without_an_answer_line() -> None:
    asked = row("m1", content="Which database?")
    assert recap_entries([asked]) == [RecapEntry("question", "Which database?")]


def test_a_recap_leaves_out_system_lines_and_messages_that_are_neither_text_nor_questions() -> None:
    system = replace(
        row("m1", type=MessageType.MESSAGE, content="server restarted"),
        author_type=AuthorType.SYSTEM,
    )
    thought = row("m2", type=MessageType.THOUGHT, content="thinking", created=2)
    assert recap_entries([system, thought]) == []
