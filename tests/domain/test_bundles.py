"""A bundle's row statuses, its five operational states, its questions and its winner."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.domain.bundles import (
    bundle_state,
    context_of,
    is_actionable,
    ordered_rows,
    policy_question_id,
    questions_of,
    row_status,
    stored_response,
    winning_response,
)
from clarion.domain.models import (
    BundleState,
    ClarificationStatus,
    Message,
    MessageType,
    MetaKey,
    Question,
    QuestionOption,
    SessionState,
)

from .builders import PENDING_ID, bundle, question, question_meta, row

S = ClarificationStatus
B = BundleState


def state(
    *rows: Message,
    current: str | None = "turn-1",
    session_state: SessionState = SessionState.WAITING_FOR_INPUT,
    live: bool = False,
) -> BundleState:
    b = bundle(*rows, current_turn_id=current, state=session_state)
    return bundle_state(b, has_live_waiter=live)


# ----------------------------------------------------------------- row status


@pytest.mark.parametrize("status", [None, ""])
def test_a_missing_status_is_pending_in_the_current_turn(status: str | None) -> None:
    extra: dict[str, Any] = {} if status is None else {"status": status}
    message = row("m", turn_id="turn-1", **extra)
    assert row_status(message, "turn-1") is S.PENDING
    assert is_actionable(message, "turn-1")


@pytest.mark.parametrize("status", [None, ""])
def test_a_missing_status_in_an_older_turn_is_superseded_history(status: str | None) -> None:
    extra: dict[str, Any] = {} if status is None else {"status": status}
    message = row("m", turn_id="old", **extra)
    assert row_status(message, "turn-1") is None
    assert not is_actionable(message, "turn-1")


def test_a_missing_status_without_any_current_turn_is_history() -> None:
    assert row_status(row("m", turn_id="turn-1"), None) is None
    assert row_status(row("m", turn_id=None), None) is None


def test_a_recorded_pending_status_is_kept_but_is_actionable_only_in_the_current_turn() -> None:
    old = row("m", turn_id="old", status="pending")
    assert row_status(old, "turn-1") is S.PENDING
    assert not is_actionable(old, "turn-1")
    assert is_actionable(row("m", status="pending"), "turn-1")


@pytest.mark.parametrize("status", ["answered", "rejected", "expired", "cancelled"])
def test_terminal_statuses_read_as_recorded_in_any_turn(status: str) -> None:
    assert row_status(row("m", status=status), "turn-1") is S(status)
    assert row_status(row("m", turn_id="old", status=status), "turn-1") is S(status)
    assert not is_actionable(row("m", status=status), "turn-1")


@pytest.mark.parametrize("status", ["responding", "PENDING", "weird", 1, True, ["pending"]])
def test_an_unknown_status_is_not_actionable(status: object) -> None:
    message = row("m", status=status)
    assert row_status(message, "turn-1") is None
    assert not is_actionable(message, "turn-1")


# ----------------------------------------------------------------- the five states


def test_pending_current_turn_rows_with_a_waiter_are_active_live() -> None:
    assert state(row("a", status="pending"), row("b"), live=True) is B.ACTIVE_LIVE


def test_pending_current_turn_rows_without_a_waiter_are_active_detached() -> None:
    rows = (row("a", status="pending", agent_disconnected=True),)
    assert state(*rows) is B.ACTIVE_DETACHED


def test_a_pending_row_without_waiter_or_detach_flag_is_still_active_detached() -> None:
    # A crash between losing the waiter and writing agent_disconnected: answering it must take
    # the detached path, and startup detaches it.
    assert state(row("a", status="pending")) is B.ACTIVE_DETACHED


def test_a_detached_flag_does_not_override_a_present_waiter() -> None:
    assert state(row("a", agent_disconnected="true"), live=True) is B.ACTIVE_LIVE


def test_pending_rows_in_an_older_turn_are_superseded_history() -> None:
    rows = (row("a", turn_id="old", status="pending"),)
    assert state(*rows) is B.SUPERSEDED_HISTORY
    assert state(*rows, live=True) is B.SUPERSEDED_HISTORY


def test_missing_status_rows_in_an_older_turn_are_superseded_history() -> None:
    assert state(row("a", turn_id="old")) is B.SUPERSEDED_HISTORY


def test_pending_rows_without_a_durable_current_turn_are_superseded_history() -> None:
    assert state(row("a", status="pending"), current=None) is B.SUPERSEDED_HISTORY
    assert state(row("a", turn_id=None, status="pending"), current=None) is B.SUPERSEDED_HISTORY


def test_a_pending_row_without_a_turn_is_inert_even_when_the_session_has_one() -> None:
    assert state(row("a", turn_id=None, status="pending"), live=True) is B.SUPERSEDED_HISTORY


def test_a_bundle_spread_over_two_turns_is_never_active() -> None:
    rows = (row("a", status="pending"), row("b", turn_id="old", status="pending"))
    assert state(*rows, live=True) is B.SUPERSEDED_HISTORY


def test_a_bundle_with_a_row_of_another_session_is_never_active() -> None:
    rows = (row("a", status="pending"), row("b", session_id="other", status="pending"))
    assert state(*rows) is B.SUPERSEDED_HISTORY


def test_a_bundle_with_a_row_of_another_type_is_never_active() -> None:
    rows = (row("a", status="pending"), row("b", type=MessageType.MESSAGE, status="pending"))
    assert state(*rows) is B.SUPERSEDED_HISTORY


def test_rows_carrying_the_delivery_intent_are_delivery_claimed() -> None:
    rows = (row("a", status="answered", response_delivery_pending=True),)
    assert state(*rows) is B.DELIVERY_CLAIMED
    assert state(*rows, live=True) is B.DELIVERY_CLAIMED


@pytest.mark.parametrize("encoding", [True, "true", "1", 1])
def test_the_delivery_intent_is_read_with_the_truthy_rule(encoding: object) -> None:
    assert state(row("a", status="rejected", response_delivery_pending=encoding)) is (
        B.DELIVERY_CLAIMED
    )


@pytest.mark.parametrize("encoding", [False, "false", 0, "TRUE"])
def test_a_falsy_delivery_intent_is_no_claim(encoding: object) -> None:
    assert state(row("a", status="answered", response_delivery_pending=encoding)) is B.TERMINAL


def test_one_claimed_row_makes_the_whole_bundle_delivery_claimed() -> None:
    rows = (row("a", status="answered", response_delivery_pending=True), row("b", status="pending"))
    assert state(*rows, live=True) is B.DELIVERY_CLAIMED


def test_a_claim_in_flight_reads_as_delivery_claimed_after_its_successor_became_current() -> None:
    # Detached resume after the attempt marker: the successor is current, the claimed rows
    # still carry the intent until publication.
    rows = (row("a", turn_id="ask", status="answered", response_delivery_pending=True),)
    assert state(*rows, current="successor") is B.DELIVERY_CLAIMED


def test_pending_history_in_an_older_turn_wins_over_a_stale_intent() -> None:
    rows = (
        row("a", turn_id="old", status="answered", response_delivery_pending=True),
        row("b", turn_id="old", status="pending"),
    )
    assert state(*rows) is B.SUPERSEDED_HISTORY


@pytest.mark.parametrize("status", ["answered", "rejected", "expired", "cancelled"])
def test_every_row_terminal_is_terminal(status: str) -> None:
    assert state(row("a", status=status), row("b", status="answered"), live=True) is B.TERMINAL


def test_terminal_rows_in_an_older_turn_stay_terminal_not_superseded() -> None:
    assert state(row("a", turn_id="old", status="answered")) is B.TERMINAL


def test_a_partially_terminal_current_bundle_is_still_active() -> None:
    rows = (row("a", status="answered"), row("b", status="pending"))
    assert state(*rows) is B.ACTIVE_DETACHED
    assert state(*rows, live=True) is B.ACTIVE_LIVE


@pytest.mark.parametrize(
    "session_state", [SessionState.COMPLETED, SessionState.FAILED, SessionState.CANCELLED]
)
def test_a_terminal_session_makes_every_bundle_terminal(session_state: SessionState) -> None:
    for rows in (
        (row("a", status="pending"),),
        (row("a", turn_id="old", status="pending"),),
        (row("a", status="answered", response_delivery_pending=True),),
    ):
        assert state(*rows, session_state=session_state, live=True) is B.TERMINAL


@pytest.mark.parametrize(
    "session_state",
    [SessionState.CREATED, SessionState.RUNNING, SessionState.IDLE, SessionState.WAITING_FOR_INPUT],
)
def test_a_non_terminal_session_leaves_the_rows_to_decide(session_state: SessionState) -> None:
    assert state(row("a"), session_state=session_state) is B.ACTIVE_DETACHED


def test_unknown_statuses_alone_make_a_terminal_bundle() -> None:
    assert state(row("a", status="responding")) is B.TERMINAL


def test_a_bundle_without_rows_is_terminal() -> None:
    assert state() is B.TERMINAL


# ----------------------------------------------------------------- questions and context


def test_bundle_question_ordering_by_question_index() -> None:
    b = bundle(row("m2", index=1, question_id="q2"), row("m1", index=0, question_id="q1"))
    assert [m.id for m in ordered_rows(b)] == ["m1", "m2"]
    assert [q.id for q in questions_of(b)] == ["q1", "q2"]


def test_bundle_question_ordering_breaks_ties_by_created_at_then_id() -> None:
    b = bundle(
        row("z", index=0, created=5, question_id="q3"),
        row("a", index=0, created=5, question_id="q1"),
        row("m", index=0, created=4, question_id="q2"),
    )
    assert [m.id for m in ordered_rows(b)] == ["m", "a", "z"]


@pytest.mark.parametrize("bad_index", [None, "1", True, 1.5, [1]])
def test_bundle_question_ordering_reads_a_missing_or_bad_index_as_zero(bad_index: object) -> None:
    b = bundle(row("b", index=1), row("a", index=None, created=1, question_index=bad_index))
    assert [m.id for m in ordered_rows(b)] == ["a", "b"]


def test_bundle_question_ordering_accepts_an_integral_float_index() -> None:
    b = bundle(row("b", index=None, question_index=2.0), row("a", index=1))
    assert [m.id for m in ordered_rows(b)] == ["a", "b"]


def test_bundle_question_ordering_does_not_mutate_the_bundle() -> None:
    b = bundle(row("m2", index=1), row("m1", index=0))
    ordered_rows(b)
    assert [m.id for m in b.rows] == ["m2", "m1"]


def test_questions_of_parses_the_full_question_including_options() -> None:
    db = Question(
        id="db",
        title="Database",
        prompt="Which database?",
        options=(QuestionOption("pg", "PostgreSQL", "SQL"), QuestionOption("lite", "SQLite")),
    )
    b = bundle(row("m1", question_id="db", question=question_meta(db), content="Which database?"))
    assert questions_of(b) == (db,)


def test_questions_of_degrades_gracefully_on_unparseable_question_metadata() -> None:
    b = bundle(row("m1", question_id="q1", question="not an object", content="From content"))
    assert questions_of(b) == (Question(id="q1", title="", prompt="From content", options=()),)


def test_questions_of_skips_options_that_are_not_objects_and_blanks_bad_fields() -> None:
    meta = {"id": "q1", "prompt": "P", "options": [{"option_id": "a", "label": 3}, "junk"]}
    (q,) = questions_of(bundle(row("m1", question=meta)))
    assert q.options == (QuestionOption("a", "", ""),)


def test_questions_of_takes_the_id_from_question_metadata_when_the_flat_key_is_absent() -> None:
    (q,) = questions_of(bundle(row("m1", question={"id": "inner", "prompt": "P"})))
    assert q.id == "inner"


def test_questions_of_prefers_the_flat_question_id() -> None:
    (q,) = questions_of(bundle(row("m1", question_id="flat", question={"id": "inner"})))
    assert q.id == "flat"


def test_questions_of_yields_an_empty_id_when_none_is_recorded() -> None:
    (q,) = questions_of(bundle(row("m1", question={"prompt": "no id here"})))
    assert q.id == ""


def test_context_of_reads_the_shared_context() -> None:
    b = bundle(row("m2", index=1, context="Shared."), row("m1", index=0, context="Shared."))
    assert context_of(b) == "Shared."


def test_context_of_is_empty_when_absent_or_malformed() -> None:
    assert context_of(bundle(row("m1"))) == ""
    assert context_of(bundle(row("m1", context=5))) == ""
    assert context_of(bundle()) == ""


# ----------------------------------------------------------------- the winner


def answered_row(
    message_id: str, q: Question, *selected: str, text: str = "", **kw: Any
) -> Message:
    response = {"question_id": q.id, "selected_options": list(selected), "custom_text": text}
    return row(
        message_id,
        question_id=q.id,
        question=question_meta(q),
        status="answered",
        response=response,
        **kw,
    )


def test_winning_response_of_an_answered_bundle_has_the_wire_shape() -> None:
    db, lang = question("db", "pg", "lite"), question("lang", "py", "go")
    b = bundle(
        answered_row("m2", lang, text="Python", index=1, created=1, updated=10),
        answered_row("m1", db, "pg", index=0, created=1, updated=10),
    )
    assert winning_response(b) == {
        "pending_id": PENDING_ID,
        "answers": [
            {"question_id": "db", "selected_options": ["pg"], "custom_text": ""},
            {"question_id": "lang", "selected_options": [], "custom_text": "Python"},
        ],
        "rejected": False,
        "reject_reason": "",
        "responded_at": "2026-01-01T00:00:10+00:00",
    }


def test_winning_response_of_a_rejected_bundle_carries_the_stored_reason() -> None:
    b = bundle(
        row("m1", status="rejected", reject_reason="User skipped", updated=7),
        row("m2", index=1, status="rejected", reject_reason="User skipped", updated=7),
    )
    assert winning_response(b) == {
        "pending_id": PENDING_ID,
        "answers": [],
        "rejected": True,
        "reject_reason": "User skipped",
        "responded_at": "2026-01-01T00:00:07+00:00",
    }


def test_winning_response_of_a_rejection_without_a_stored_reason_has_an_empty_reason() -> None:
    response = stored_response(bundle(row("m1", status="rejected")))
    assert response is not None
    assert response.reject_reason == ""


def test_winning_response_uses_the_latest_winner_row_time() -> None:
    q1, q2 = question("q1", "a", "b"), question("q2", "a", "b")
    b = bundle(
        answered_row("m1", q1, "a", updated=3), answered_row("m2", q2, "b", index=1, updated=8)
    )
    response = stored_response(b)
    assert response is not None
    assert response.responded_at is not None
    assert response.responded_at.second == 8


def test_winning_response_is_none_when_nothing_was_answered_or_rejected() -> None:
    for rows in (
        (row("m1"),),
        (row("m1", status="pending"),),
        (row("m1", status="expired"), row("m2", status="cancelled")),
        (),
    ):
        assert winning_response(bundle(*rows)) is None


def test_winning_response_lists_only_answered_rows_of_a_mixed_bundle() -> None:
    q1 = question("q1", "a", "b")
    b = bundle(answered_row("m1", q1, "a"), row("m2", index=1, question_id="q2", status="expired"))
    response = stored_response(b)
    assert response is not None
    assert [a.question_id for a in response.answers] == ["q1"]


def test_winning_response_prefers_answers_over_rejections() -> None:
    q1 = question("q1", "a", "b")
    b = bundle(answered_row("m1", q1, "a"), row("m2", index=1, status="rejected"))
    response = stored_response(b)
    assert response is not None
    assert response.rejected is False


def test_winning_response_reads_a_malformed_stored_answer_as_empty() -> None:
    q1 = question("q1", "a", "b")
    b = bundle(
        row("m1", question_id="q1", question=question_meta(q1), status="answered", response="x"),
        row(
            "m2",
            index=1,
            question_id="q2",
            status="answered",
            response={"selected_options": ["a", 3], "custom_text": None},
        ),
    )
    response = winning_response(b)
    assert response is not None
    assert response["answers"] == [
        {"question_id": "q1", "selected_options": [], "custom_text": ""},
        {"question_id": "q2", "selected_options": ["a"], "custom_text": ""},
    ]


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({MetaKey.PENDING_ID: "p1", MetaKey.WAITING: True}, "p1"),
        ({MetaKey.PENDING_ID: "p1"}, None),  # asked without a policy
        ({MetaKey.WAITING: True}, None),  # not a question's row
        ({MetaKey.PENDING_ID: 7, MetaKey.WAITING: True}, None),  # not a pending id
    ],
    ids=["policy-question", "no-policy", "no-pending-id", "bad-pending-id"],
)
def test_only_a_row_of_a_question_asked_under_a_policy_names_its_pending_id(
    metadata: dict[str, Any], expected: str | None
) -> None:
    assert policy_question_id(metadata) == expected
