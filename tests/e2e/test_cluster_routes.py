"""Every route on every replica: three `clarion serve --cluster` processes on one PostgreSQL
database and one NATS, each running sessions. A request that acts on a session is carried to
the replica that runs it over NATS request-reply; the caller gets exactly the single-mode
outcome.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.cli.cli_runner import run_cli
from tests.e2e.cluster import (
    RESUME_MARK,
    cluster_list,
    replica_id,
    retrying,
    session_owner,
    three_replicas,
    wait_role,
)
from tests.e2e.harness import ServerProcess, answer, recv_until, wait_until
from tests.e2e.permission_steps import decide, wait_for_permission
from tests.ops.scrape import scrape, value

pytestmark = pytest.mark.postgres


def test_new_sessions_spread_over_the_replicas_and_an_answer_posted_anywhere_reaches_the_live_waiter(  # noqa: E501
    replicas: Callable[..., ServerProcess],
) -> None:
    a, b, c = three_replicas(replicas)
    ids = [replica_id(s) for s in (a, b, c)]
    assert sorted(str(r["id"]) for r in cluster_list(b)) == sorted(ids)
    assert {str(r["role"]) for r in cluster_list(b)} == {"active"}
    # Each new session goes to the replica with the fewest, wherever it was asked for.
    task_id, session_id, pending_id = _live_question_across(b, c)
    others = [b.start_session(b.create_task(), "/scenario ask") for _ in range(2)]
    asked = [b.wait_for_bundle(s) for s in others]
    # Started through c while all had none: c's (no hop); then b's, then a's.
    owners = [session_owner(a, s) for s in (session_id, *others)]
    assert owners == [ids[2], ids[1], ids[0]]
    # The session read names its owner, on any replica, and the CLI shows it.
    for reader in (a, b, c):
        reads = [reader.ok("GET", f"/task-sessions/{s}")["session"] for s in (session_id, *others)]
        assert [r["replica_id"] for r in reads] == owners
    shown = run_cli(a, "session", "show", session_id)
    assert shown.exit_code == 0, shown
    assert f"replica {ids[2]}" in shown.stdout
    wait_until(
        lambda: {r["id"]: r["sessions"] for r in cluster_list(c)} == dict.fromkeys(ids, 1),
        what="each replica counting its one agent",
    )
    # A read that depends on the live waiter is answered by the waiter's replica.
    assert b.bundle(pending_id)["state"] == "active_live"
    # So is the inbox, on any replica: each owner is asked about its own questions.
    for other in asked:
        c.wait_for_state(other, "active_live")
    inbox = {i["id"]: i["state"] for i in c.ok("GET", "/inbox")["items"]}
    assert inbox == dict.fromkeys([pending_id, *asked], "active_live")

    with c.websocket() as ws:  # events reach every replica's clients over the shared bus
        ws.send(
            json.dumps({"id": "1", "action": "task.subscribe", "payload": {"task_id": task_id}})
        )
        recv_until(ws, lambda m: m.get("type") == "response" and m.get("id") == "1")
        # Revisions come from the database, so a read on one replica orders with a read (or
        # a notification) from another.
        ws.send(json.dumps({"id": "2", "action": "session.list", "payload": {"task_id": task_id}}))
        listed = recv_until(ws, lambda m: m.get("id") == "2")["payload"]
        assert [s["id"] for s in listed["sessions"]] == [session_id]
        direct = a.ok("GET", f"/tasks/{task_id}/task-sessions")["sessions"][0]
        assert listed["sessions"][0]["pending_action"] == direct["pending_action"]
        revision = listed["sessions"][0]["pending_action_revision"]
        assert revision["epoch"] == direct["pending_action_revision"]["epoch"]
        assert revision["sequence"] < direct["pending_action_revision"]["sequence"]
        response = b.respond(pending_id, answer("db", "sqlite"))
        assert response.status_code == 200, response.text
        assert response.json()["resumed"] is False
        # Counted once, where it ran (c, the owner); b only carried it.
        on_b, on_c = scrape(b), scrape(c)
        assert value(on_b, "clarion_carried_requests_total") >= 1
        assert value(on_b, "clarion_answers_total", outcome="accepted") == 0
        assert value(on_c, "clarion_answers_total", outcome="accepted") == 1
        assert value(on_c, "clarion_respond_seconds_count", path="live") == 1
        assert value(on_b, "clarion_replicas") == 3
        recv_until(
            ws,
            lambda m: (
                m.get("action") == "session.message.added" and "You answered" in json.dumps(m)
            ),
        )
    c.wait_for_agent_text(session_id, "You answered")
    assert b.bundle(pending_id)["state"] == "terminal"


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


def test_racing_answers_and_permission_decisions_on_two_non_owners_exactly_one_wins_each(
    replicas: Callable[..., ServerProcess],
) -> None:
    active, b, c = three_replicas(replicas)
    session_id, pending_id = active.live_question()
    assert session_owner(active, session_id) == replica_id(active)
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

    # The same for an agent's permission request (its session goes to b, which has none),
    # decided through the two other replicas at once.
    asking = b.start_session(b.create_task(), "/scenario permission")
    assert session_owner(b, asking) == replica_id(b)
    message_id = str(wait_for_permission(c, asking)["id"])
    decisions = _race(
        {
            "allow": lambda: decide(active, message_id, {"option_id": "allow"}),
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


def test_a_detached_answer_posted_to_a_non_owner_resumes_the_agent_once(
    replicas: Callable[..., ServerProcess],
) -> None:
    active, b, c = three_replicas(replicas)
    session_id, pending_id = b.detached_question()
    assert session_owner(b, session_id) == replica_id(b)
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
def test_an_answer_in_flight_when_its_replica_dies_is_neither_lost_nor_dispatched_twice(
    expiring_replicas: Callable[..., ServerProcess],
    point: str,
    detached: bool,
    settled: set[str] | None,
) -> None:
    active, b, c = three_replicas(expiring_replicas, failpoints=f"{point}=crash")
    if detached:
        session_id, pending_id = active.detached_question()
    else:
        session_id, pending_id = active.live_question()

    # The session's replica dies holding the carried request: the replica that carried it says
    # it may have been applied, and that sending it again is safe.
    first = b.respond(pending_id, answer("db", "sqlite", text="first"))
    assert first.status_code == 503, first.text
    assert first.json()["error"]["code"] == "replica_unreachable"
    assert first.json()["error"]["retryable"] is True
    assert active.wait_exit(timeout=60) == 137

    # Exactly one survivor adopts the session and reconciles it, as a restarted server would;
    # the retry waits for that adoption rather than failing.
    retry = retrying(lambda: b.respond(pending_id, answer("db", "sqlite", text="first")))
    adopter = session_owner(b, session_id)
    assert adopter in {replica_id(b), replica_id(c)}
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
    assert {r["id"] for r in cluster_list(c)} == {replica_id(b), replica_id(c)}


def test_a_survivor_that_dies_while_taking_over_leaves_the_answer_to_the_next_one_once(
    expiring_replicas: Callable[..., ServerProcess],
) -> None:
    active = expiring_replicas()
    active.start(failpoints="resume.after_reserve=crash", wait_ready=False)
    wait_role(active, "active")
    # Its own start adopts nothing, so its recovery (and the fault point) does not run then.
    dying = expiring_replicas()
    dying.start(failpoints="startup.reservations=crash", wait_ready=False)
    dying_id = wait_role(dying, "active")
    session_id, pending_id = active.detached_question()
    assert session_owner(active, session_id) == replica_id(active)

    # The session's replica dies holding the answer's reservation; the survivor adopts the
    # session and dies too, before its recovery reconciled anything.
    with pytest.raises(httpx.HTTPError):
        active.respond(pending_id, answer("db", "sqlite", text="first"))
    assert active.wait_exit(timeout=60) == 137
    assert dying.wait_exit(timeout=120) == 137
    assert "startup.reservations" in dying.logs()
    assert session_owner(dying, session_id) == dying_id  # adopted before it died

    # The next replica adopts the session from the dead adopter and reconciles it: the
    # reservation is rolled back, the answer is accepted once and resumes the agent once.
    last = expiring_replicas()
    last.start(wait_ready=False)
    last_id = wait_role(last, "active")
    retry = retrying(lambda: last.respond(pending_id, answer("db", "sqlite", text="first")))
    assert session_owner(last, session_id) == last_id
    assert retry.status_code == 200, retry.text
    assert retry.json()["resumed"] is True
    last.wait_for_agent_text(session_id, RESUME_MARK)
    assert last.resume_prompts_seen(session_id) == 1


def test_an_answer_link_works_on_every_replica_and_reaches_the_owner(
    replicas: Callable[..., ServerProcess],
) -> None:
    a, b, c = three_replicas(replicas)
    # A live question on a (the first session goes to the oldest replica): its link, issued by
    # b, answered through c, reaches a's live waiter; the key is the database's, shared.
    live_session, live_pending = a.live_question()
    assert session_owner(b, live_session) == replica_id(a)
    token = str(b.bundle(live_pending)["answer_url"]).rsplit("/a/", 1)[1]
    read = httpx.get(f"{c.url}/api/v1/a/{token}", timeout=30)
    assert read.status_code == 200 and read.json()["state"] == "active_live"
    answered = httpx.post(
        f"{c.url}/api/v1/a/{token}/respond", json=answer("db", "sqlite"), timeout=60
    )
    assert answered.status_code == 200, answered.text
    a.wait_for_agent_text(live_session, "You answered:")
    again = httpx.post(
        f"{b.url}/api/v1/a/{token}/respond", json=answer("db", "postgres"), timeout=60
    )
    assert again.status_code == 409, again.text
    assert again.json()["error"]["response"]["answers"][0]["selected_options"] == ["sqlite"]
    # A forged token is refused on every replica alike.
    for server in (a, b, c):
        forged = httpx.post(f"{server.url}/api/v1/a/{token[:-4]}AAAA/respond", json={})
        assert forged.status_code == 404
