"""Ids sort in the order they were made; errors carry their wire code and the ids they name."""

from __future__ import annotations

import re
import time
from unittest import mock

import pytest

from clarion.domain.errors import (
    AgentFailure,
    ClarificationActive,
    ClarionError,
    NotActive,
    ReplicaUnavailable,
    ReplicaUnreachable,
    RetryableFailure,
    field_path,
)
from clarion.domain.ids import new_id

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_an_id_has_the_uuid7_layout() -> None:
    assert UUID7.match(new_id())


def test_ids_made_within_one_millisecond_still_sort_in_creation_order() -> None:
    with mock.patch.object(time, "time_ns", return_value=5_000_000_000_000_000):
        made = [new_id() for _ in range(50)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_ids_keep_their_order_when_one_millisecond_runs_out_of_counter_values() -> None:
    # 4096 ids fit one millisecond's 12-bit counter; the next borrows the following millisecond.
    with mock.patch.object(time, "time_ns", return_value=6_000_000_000_000_000):
        made = [new_id() for _ in range(4100)]
    assert made == sorted(made)
    assert made[-1][:13] != made[0][:13], "the overflowing ids moved to the next millisecond"


def test_ids_keep_their_order_when_the_clock_steps_back() -> None:
    with mock.patch.object(time, "time_ns", return_value=7_000_000_000_000_000):
        first = new_id()
    with mock.patch.object(time, "time_ns", return_value=6_999_000_000_000_000):
        second = new_id()
    assert first < second


def test_an_error_keeps_only_the_ids_it_was_given_a_value_for() -> None:
    error = ClarionError("boom", pending_id="p1", session_id=None)
    assert (error.code, error.message, error.ids) == ("internal", "boom", {"pending_id": "p1"})


def test_not_active_carries_the_state_the_winning_response_and_its_delivery() -> None:
    error = NotActive(
        "already answered",
        state="terminal",
        response={"answers": []},
        delivery="ambiguous",
        pending_id="p1",
    )
    assert error.code == "not_active"
    assert (error.state, error.response, error.delivery) == (
        "terminal",
        {"answers": []},
        "ambiguous",
    )
    assert error.ids == {"pending_id": "p1"}


def test_a_retryable_failure_reports_the_code_it_was_raised_with() -> None:
    error = RetryableFailure("agent did not accept", code="resume_not_accepted", pending_id="p1")
    assert (error.code, error.ids) == ("resume_not_accepted", {"pending_id": "p1"})


def test_clarification_active_names_the_bundle_and_its_state() -> None:
    error = ClarificationActive("still active", state="active_live", pending_id="p1")
    assert error.code == "clarification_active"
    assert error.state == "active_live" and error.pending_id == "p1"
    assert error.ids == {"pending_id": "p1"}


def test_an_unavailable_replica_names_the_replica_that_runs_the_session() -> None:
    error = ReplicaUnavailable("could not be reached", replica_id="r1", replica_url="http://a:8787")
    assert error.code == "replica_unavailable"
    assert (error.replica_id, error.replica_url) == ("r1", "http://a:8787")


def test_an_unreachable_replica_has_its_own_code() -> None:
    assert ReplicaUnreachable("no reply", replica_id="r1").code == "replica_unreachable"


def test_an_agent_failure_keeps_its_stderr_and_exit_code() -> None:
    error = AgentFailure("the agent exited", stderr="boom", exit_code=3, session_id="s1")
    assert error.code == "agent_unavailable"
    assert (error.stderr, error.exit_code, error.ids) == ("boom", 3, {"session_id": "s1"})


@pytest.mark.parametrize(
    ("loc", "path"),
    [((), "$"), (("a",), "a"), (("a", 0, "b"), "a[0].b"), ((0,), "[0]"), (("a", 1, 2), "a[1][2]")],
)
def test_field_paths_read_like_accessors(loc: tuple[str | int, ...], path: str) -> None:
    assert field_path(loc, "$") == path


def test_an_empty_field_path_is_the_root_its_edge_names() -> None:
    assert field_path((), "arguments") == "arguments"
