"""Crashes at every durable boundary: kill a real server at a fault point, restart it on the
same database, and check that no answer is lost, none is dispatched twice, and the bundle is in
exactly the state the lifecycle prescribes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.e2e.harness import RESUME_MARK, ServerProcess, answer
from tests.ops.scrape import scrape, value

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def _crash_on_respond(server: ServerProcess, pending_id: str) -> None:
    with pytest.raises(httpx.HTTPError):
        server.respond(pending_id, answer("db", "sqlite"))
    assert server.wait_exit() == 137


def _conversational_turns(server: ServerProcess, session_id: str) -> list[dict[str, Any]]:
    return [t for t in server.turns(session_id) if not t["metadata"].get("lifecycle_only")]


@pytest.mark.parametrize("db", DBS)
@pytest.mark.parametrize("point", ["respond.after_claim", "live.before_confirm"])
def test_crash_before_live_handoff_restores_the_answerable_bundle(
    make_server: Callable[..., ServerProcess], db: str, point: str
) -> None:
    server = make_server(db=db)
    server.start(failpoints=f"{point}=crash")
    session_id, pending_id = server.live_question()

    _crash_on_respond(server, pending_id)
    server.start()

    bundle = server.bundle(pending_id)
    assert bundle["state"] == "active_detached"
    assert all(r["metadata"]["status"] == "pending" for r in bundle["rows"])
    assert all("response_delivery_pending" not in r["metadata"] for r in bundle["rows"])
    response = server.respond(pending_id, answer("db", "sqlite"))
    assert response.status_code == 200, response.text
    assert response.json()["resumed"] is True
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.resume_prompts_seen(session_id) == 1


@pytest.mark.parametrize("db", DBS)
@pytest.mark.parametrize("point", ["respond.after_claim", "resume.after_reserve"])
def test_crash_before_attempt_marker_rolls_back_to_exactly_the_claimed_rows(
    make_server: Callable[..., ServerProcess], db: str, point: str
) -> None:
    server = make_server(db=db)
    server.start(failpoints=f"{point}=crash")
    session_id, pending_id = server.detached_question()
    turns_before = [t["id"] for t in _conversational_turns(server, session_id)]

    _crash_on_respond(server, pending_id)
    server.start()

    assert [t["id"] for t in _conversational_turns(server, session_id)] == turns_before
    assert server.bundle(pending_id)["state"] == "active_detached"
    response = server.respond(pending_id, answer("db", "postgres"))
    assert response.status_code == 200, response.text
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.resume_prompts_seen(session_id) == 1
    assert len(_conversational_turns(server, session_id)) == len(turns_before) + 1


@pytest.mark.parametrize("db", DBS)
@pytest.mark.parametrize(
    ("point", "deliveries"),
    [
        # Crashed before the agent was asked: nothing references the successor.
        ("resume.after_attempt", {"ambiguous"}),
        # The agent accepted; its output may have been recorded before the crash.
        ("resume.after_accept", {"ambiguous", "delivered"}),
    ],
)
def test_crash_after_attempt_marker_keeps_successor_and_never_dispatches_twice(
    make_server: Callable[..., ServerProcess], db: str, point: str, deliveries: set[str]
) -> None:
    server = make_server(db=db)
    server.start(failpoints=f"{point}=crash")
    session_id, pending_id = server.detached_question()
    turns_before = [t["id"] for t in _conversational_turns(server, session_id)]

    _crash_on_respond(server, pending_id)
    server.start()

    turns_after = _conversational_turns(server, session_id)
    assert len(turns_after) == len(turns_before) + 1, "the ambiguous successor is kept"
    successor = turns_after[-1]
    assert successor["completed_at"] is not None
    assert not any(k.startswith("prompt_dispatch") for k in successor["metadata"])
    bundle = server.bundle(pending_id)
    assert bundle["state"] == "terminal"
    assert bundle["delivery"] in deliveries
    assert all(r["metadata"]["status"] == "answered" for r in bundle["rows"])
    retry = server.respond(pending_id, answer("db", "postgres"))
    assert retry.status_code == 409
    assert retry.json()["error"]["state"] == "terminal"
    assert retry.json()["error"]["response"]["answers"][0]["selected_options"] == ["sqlite"]
    assert server.resume_prompts_seen(session_id) <= 1
    # The restarted server's metrics: recovery's finding, and the refused retry.
    figures = scrape(server)
    ambiguous = 1 if bundle["delivery"] == "ambiguous" else 0
    assert value(figures, "clarion_ambiguous_deliveries_total") == ambiguous
    assert value(figures, "clarion_answers_total", outcome="conflict") == 1


@pytest.mark.parametrize("db", DBS)
def test_rejected_dispatch_is_retryable_and_leaves_no_successor(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start(failpoints="resume.dispatch=error")
    session_id, pending_id = server.detached_question()
    turns_before = [t["id"] for t in _conversational_turns(server, session_id)]

    response = server.respond(pending_id, answer("db", "sqlite"))

    assert response.status_code == 500
    assert response.json()["error"]["retryable"] is True
    assert value(scrape(server), "clarion_answers_total", outcome="retryable_error") == 1
    assert response.json()["error"]["code"] == "resume_not_accepted"
    assert server.bundle(pending_id)["state"] == "active_detached"
    assert [t["id"] for t in _conversational_turns(server, session_id)] == turns_before
    server.stop()
    server.start()
    retry = server.respond(pending_id, answer("db", "sqlite"))
    assert retry.status_code == 200, retry.text
    server.wait_for_agent_text(session_id, RESUME_MARK)


@pytest.mark.parametrize("db", DBS)
def test_publication_failure_after_acceptance_is_final_and_recovered_on_restart(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start(failpoints="resume.publish=error")
    session_id, pending_id = server.detached_question()

    response = server.respond(pending_id, answer("db", "sqlite"))

    assert response.status_code == 500
    error = response.json()["error"]
    assert error["retryable"] is False and error["code"] == "dispatch_not_finalized"
    assert server.respond(pending_id, answer("db", "sqlite")).status_code == 409
    server.stop()
    server.start()
    assert server.bundle(pending_id)["state"] == "terminal"
    assert server.resume_prompts_seen(session_id) <= 1


@pytest.mark.parametrize("point", ["startup.reservations", "startup.intents"])
def test_startup_reconciliation_failure_aborts_startup(
    make_server: Callable[..., ServerProcess], point: str
) -> None:
    server = make_server()
    server.start(failpoints=f"{point}=error", wait_ready=False)
    assert server.wait_exit() != 0
    assert point in server.logs()
    server.start()
    assert server.ok("GET", "/tasks")["total"] == 0
