"""Every route on every replica: three `clarion serve --cluster` processes on one PostgreSQL
database and one NATS, one active and two standbys. A standby carries each API request to the
active replica over NATS request-reply; the caller gets exactly the single-mode outcome.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.e2e.cluster import (
    RESUME_MARK,
    cluster_list,
    health,
    one_active_two_standbys,
    session_owner,
    wait_role,
)
from tests.e2e.harness import ServerProcess, answer, recv_until, wait_until
from tests.e2e.permission_steps import decide, wait_for_permission

pytestmark = pytest.mark.postgres


def test_a_standby_carries_every_api_request_to_the_active_replica_and_an_answer_reaches_the_live_waiter(  # noqa: E501
    replicas: Callable[..., ServerProcess],
) -> None:
    active, b, c = one_active_two_standbys(replicas)
    active_id = str(health(active)[1]["replica"])
    # Every replica answers /healthz 200 naming itself and its role; the list agrees.
    roles = {str(health(s)[1]["replica"]): str(health(s)[1]["role"]) for s in (active, b, c)}
    assert sorted(roles.values()) == ["active", "standby", "standby"]
    assert roles[active_id] == "active"
    assert {str(r["id"]): str(r["role"]) for r in cluster_list(b)} == roles
    # Created through one standby, started through the other: the agent runs on the active one.
    task_id, session_id, pending_id = _live_question_across(b, c)
    wait_until(
        lambda: (
            {r["id"]: r["sessions"] for r in cluster_list(c)}
            == {r["id"]: (1 if r["id"] == active_id else 0) for r in cluster_list(c)}
        ),
        what="the active replica counting the one agent",
    )
    # A read whose answer depends on the live waiter is served where the waiter is.
    assert b.bundle(pending_id)["state"] == "active_live"

    with c.websocket() as ws:  # events reach a standby's clients over the shared bus
        ws.send(
            json.dumps({"id": "1", "action": "task.subscribe", "payload": {"task_id": task_id}})
        )
        recv_until(ws, lambda m: m.get("type") == "response" and m.get("id") == "1")
        # Its reads order with the notifications it gets: both come from the active replica.
        ws.send(json.dumps({"id": "2", "action": "session.list", "payload": {"task_id": task_id}}))
        listed = recv_until(ws, lambda m: m.get("id") == "2")["payload"]
        assert [s["id"] for s in listed["sessions"]] == [session_id]
        direct = active.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"][0]
        assert listed["sessions"][0]["pending_action"] == direct["pending_action"]
        revision = listed["sessions"][0]["pending_action_revision"]
        assert revision["epoch"] == direct["pending_action_revision"]["epoch"]
        assert revision["sequence"] < direct["pending_action_revision"]["sequence"]
        response = b.respond(pending_id, answer("db", "sqlite"))
        assert response.status_code == 200, response.text
        assert response.json()["resumed"] is False
        recv_until(
            ws,
            lambda m: (
                m.get("action") == "session.message.added" and "You answered" in json.dumps(m)
            ),
        )
    c.wait_for_agent_text(session_id, "You answered")
    assert active.bundle(pending_id)["state"] == "terminal"


def _live_question_across(creator: ServerProcess, starter: ServerProcess) -> tuple[str, str, str]:
    task_id = creator.create_task()
    session_id = starter.start_session(task_id, "/scenario ask")
    pending_id = creator.wait_for_bundle(session_id)
    starter.wait_for_state(pending_id, "active_live")
    return task_id, session_id, pending_id


def _race(calls: dict[str, Callable[[], httpx.Response]]) -> dict[str, httpx.Response]:
    """Each call from its own thread, all released at the same moment."""
    start = threading.Barrier(len(calls))
    results: dict[str, httpx.Response] = {}

    def run(key: str) -> None:
        start.wait()
        results[key] = calls[key]()

    racers = [threading.Thread(target=run, args=(key,)) for key in calls]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=60)
    return results


def test_racing_answers_and_permission_decisions_on_two_standbys_exactly_one_wins_each(
    replicas: Callable[..., ServerProcess],
) -> None:
    active, b, c = one_active_two_standbys(replicas)
    session_id, pending_id = active.live_question()
    outcomes = _race(
        {
            "from-b": lambda: b.respond(pending_id, answer("db", "sqlite", text="from-b")),
            "from-c": lambda: c.respond(pending_id, answer("db", "sqlite", text="from-c")),
        }
    )
    statuses = sorted(r.status_code for r in outcomes.values())
    assert statuses == [200, 409], {t: r.text for t, r in outcomes.items()}
    winner = next(t for t, r in outcomes.items() if r.status_code == 200)
    loser = next(r for r in outcomes.values() if r.status_code == 409)
    named: dict[str, Any] = loser.json()["error"]["response"]
    assert named["answers"][0]["custom_text"] == winner
    active.wait_for_agent_text(session_id, "You answered")
    assert sum("You answered" in t for t in active.agent_texts(session_id)) == 1

    # The same for an agent's permission request, decided through the two standbys at once.
    asking = b.start_session(b.create_task(), "/scenario permission")
    message_id = str(wait_for_permission(c, asking)["id"])
    decisions = _race(
        {
            "allow": lambda: decide(b, message_id, {"option_id": "allow"}),
            "reject": lambda: decide(c, message_id, {"option_id": "reject"}),
        }
    )
    assert sorted(r.status_code for r in decisions.values()) == [200, 409]
    chosen = next(o for o, r in decisions.items() if r.status_code == 200)
    refused = next(r for r in decisions.values() if r.status_code == 409).json()["error"]
    assert refused["decision"]["option_id"] == chosen
    c.wait_for_agent_text(asking, f"Permission: {chosen}")
    assert [t for t in b.agent_texts(asking) if t.startswith("Permission:")] == [
        f"Permission: {chosen}"
    ]


def test_a_detached_answer_posted_to_a_standby_resumes_the_agent_once(
    replicas: Callable[..., ServerProcess],
) -> None:
    active, b, c = one_active_two_standbys(replicas)
    session_id, pending_id = b.detached_question()
    response = c.respond(pending_id, answer("db", "postgres"))
    assert response.status_code == 200, response.text
    assert response.json()["resumed"] is True
    b.wait_for_agent_text(session_id, RESUME_MARK)
    again = b.respond(pending_id, answer("db", "sqlite"))
    assert again.status_code == 409, again.text
    assert active.resume_prompts_seen(session_id) == 1


@pytest.mark.parametrize(
    ("point", "detached", "settled"),
    [
        # Nothing reached the agent: the answer stays answerable, and the retry is applied.
        ("respond.after_claim", False, None),
        ("live.before_confirm", False, None),
        ("resume.after_reserve", True, None),
        ("resume.agent_ready", True, None),  # the agent started, it was never asked
        # The attempt marker was written (resume.dispatch is the same instant): the prompt
        # may have reached the agent, so the answer is terminal and says so.
        ("resume.after_attempt", True, {"ambiguous"}),
        # The agent accepted it (resume.publish is the same instant).
        ("resume.after_accept", True, {"ambiguous", "delivered"}),
    ],
)
def test_an_answer_in_flight_when_the_active_replica_dies_is_neither_lost_nor_dispatched_twice(
    replicas: Callable[..., ServerProcess], point: str, detached: bool, settled: set[str] | None
) -> None:
    active, b, c = one_active_two_standbys(replicas, failpoints=f"{point}=crash")
    if detached:
        session_id, pending_id = active.detached_question()
    else:
        session_id, pending_id = active.live_question()

    # The active replica dies holding the carried request: the standby says it may have been
    # applied, and that sending it again is safe.
    first = b.respond(pending_id, answer("db", "sqlite", text="first"))
    assert first.status_code == 503, first.text
    assert first.json()["error"]["code"] == "replica_unreachable"
    assert first.json()["error"]["retryable"] is True
    assert active.wait_exit(timeout=60) == 137

    # Exactly one survivor takes over and reconciles, as a restarted server would.
    wait_until(
        lambda: (
            sorted(str(health(s)[1].get("role")) for s in (b, c)) == ["active", "standby"]
            and all(health(s)[0] == 200 for s in (b, c))
        ),
        timeout=120,
        what="one survivor active, the other standby",
    )
    retry = b.respond(pending_id, answer("db", "sqlite", text="first"))
    if settled is not None:
        # The answer is terminal, and its delivery is reported as the crash left it, never
        # dispatched again on its own.
        assert retry.status_code == 409, retry.text
        assert b.bundle(pending_id)["delivery"] in settled
    else:
        assert retry.status_code == 200, retry.text
        assert retry.json()["resumed"] is True
        c.wait_for_agent_text(session_id, RESUME_MARK)
    assert c.resume_prompts_seen(session_id) <= 1


def test_a_survivor_that_dies_while_taking_over_leaves_the_answer_to_the_next_one_once(
    replicas: Callable[..., ServerProcess],
) -> None:
    active = replicas()
    active.start(failpoints="resume.after_reserve=crash", wait_ready=False)
    wait_role(active, "active")
    dying = replicas()
    dying.start(failpoints="startup.reservations=crash", wait_ready=False)
    dying_id = wait_role(dying, "standby")
    session_id, pending_id = active.detached_question()

    # The active replica dies holding the answer's reservation; the standby takes over,
    # adopts the session and dies too, before its recovery reconciled anything.
    with pytest.raises(httpx.HTTPError):
        active.respond(pending_id, answer("db", "sqlite", text="first"))
    assert active.wait_exit(timeout=60) == 137
    assert dying.wait_exit(timeout=120) == 137
    assert "startup.reservations" in dying.logs()
    assert session_owner(dying, session_id) == dying_id  # adopted before it died

    # The next replica adopts the session from the dead adopter and reconciles it: the
    # reservation is rolled back, the answer is accepted once and resumes the agent once.
    last = replicas()
    last.start(wait_ready=False)
    last_id = wait_role(last, "active")
    assert session_owner(last, session_id) == last_id
    retry = last.respond(pending_id, answer("db", "sqlite", text="first"))
    assert retry.status_code == 200, retry.text
    assert retry.json()["resumed"] is True
    last.wait_for_agent_text(session_id, RESUME_MARK)
    assert last.resume_prompts_seen(session_id) == 1
