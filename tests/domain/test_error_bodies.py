"""Every error's HTTP status and wire body, as the API and the MCP edge both send them."""

from __future__ import annotations

from clarion.domain.error_bodies import INTERNAL_MESSAGE, error_body
from clarion.domain.errors import (
    AgentUnavailable,
    ClarificationActive,
    ClarionError,
    DecisionNotActive,
    InvalidInput,
    NotActive,
    NotFound,
    ReplicaUnavailable,
)


def test_an_unmapped_exception_is_a_500_that_says_nothing_of_itself() -> None:
    status, body = error_body(RuntimeError("secret detail"))
    assert status == 500
    assert body["error"]["code"] == "internal"
    assert body["error"]["message"] == INTERNAL_MESSAGE
    assert "secret detail" not in str(body)


def test_an_error_of_the_domain_with_no_status_of_its_own_is_a_500_too() -> None:
    class Unlisted(ClarionError):
        code = "unlisted"

    status, body = error_body(Unlisted("not for the wire"))
    assert (status, body["error"]["code"]) == (500, "internal")


def test_a_replica_that_could_not_be_reached_is_named_with_its_address() -> None:
    exc = ReplicaUnavailable("gone", replica_id="r1", replica_url="http://r1:8080")
    status, body = error_body(exc)
    assert status == 503
    assert body["error"]["replica"] == {"id": "r1", "advertise_url": "http://r1:8080"}
    assert body["error"]["retryable"] is True


def test_bad_input_names_its_field_only_when_it_has_one() -> None:
    assert error_body(InvalidInput("bad", field="answers[0]"))[1]["error"]["field"] == "answers[0]"
    assert "field" not in error_body(InvalidInput("bad"))[1]["error"]


def test_conflicts_carry_the_state_and_what_won() -> None:
    active = error_body(ClarificationActive("busy", state="active_live", pending_id="p1"))[1]
    assert (active["error"]["state"], active["error"]["pending_id"]) == ("active_live", "p1")
    decided = error_body(
        DecisionNotActive("decided", state="decided", decision={"option_id": "allow"})
    )[1]
    assert decided["error"]["decision"] == {"option_id": "allow"}
    answered = error_body(
        NotActive("taken", state="terminal", response={"answers": []}, delivery="delivered")
    )[1]["error"]
    assert (answered["response"], answered["delivery"]) == ({"answers": []}, "delivered")
    bare = error_body(NotActive("taken", state="terminal"))[1]["error"]
    assert "response" not in bare and "delivery" not in bare


def test_a_failed_agent_start_names_the_session_it_left_behind() -> None:
    status, body = error_body(AgentUnavailable("no agent", session_id="s1"))
    assert status == 409
    assert body["error"]["session_id"] == "s1"
    assert "session_id" not in error_body(AgentUnavailable("no agent"))[1]["error"]


def test_an_error_without_extras_has_only_the_common_fields() -> None:
    status, body = error_body(NotFound("no such task", task_id="t1"))
    assert status == 404
    assert set(body["error"]) >= {"code", "message", "retryable"}
    assert "state" not in body["error"]
