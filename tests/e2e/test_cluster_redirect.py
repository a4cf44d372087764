"""`cluster.redirect_to_owner` on two real replicas (PostgreSQL, NATS): a client that
follows redirects answers a live question through the replica that does not run it; the
non-owner answers with a 307 to the owner's advertise URL (which every read of the session and
the bundle names), the owner serves the answer itself, nothing is carried, and the waiting
agent receives the answer once."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.e2e.cluster import replica_id, session_owner, wait_role
from tests.e2e.harness import ServerProcess, answer
from tests.ops.scrape import scrape, value

pytestmark = pytest.mark.postgres

REDIRECTING = {"CLARION_REDIRECT_TO_OWNER": "1"}


def test_a_following_client_answers_through_the_non_owner_and_the_agent_gets_it_once(
    replicas: Callable[..., ServerProcess],
) -> None:
    owner = replicas()
    owner.env.update(REDIRECTING)
    owner.start(wait_ready=False)
    wait_role(owner, "active")
    other = replicas()
    other.env.update(REDIRECTING)
    other.start(wait_ready=False)
    wait_role(other, "active")
    # Started through the owner while both have none: its own (no hop).
    session_id, pending_id = owner.live_question()
    assert session_owner(owner, session_id) == replica_id(owner)
    # Any replica's reads name the owner and the address to send its requests to.
    session = other.ok("GET", f"/task-sessions/{session_id}")["session"]
    assert (session["replica_id"], session["replica_url"]) == (replica_id(owner), owner.url)

    path = f"/api/v1/clarification/{pending_id}/respond"
    with httpx.Client(base_url=other.url, follow_redirects=True, timeout=60) as client:
        # The bundle's read is served by its owner too (its live state is known there).
        read = client.get(f"/api/v1/clarification/{pending_id}")
        assert read.status_code == 200 and read.json()["replica_url"] == owner.url
        assert read.json()["state"] == "active_live"
        response = client.post(path, json=answer("db", "sqlite"))
    assert response.status_code == 200, response.text
    assert response.json()["resumed"] is False
    assert [(r.status_code, r.headers["location"]) for r in response.history] == [
        (307, f"{owner.url}{path}")
    ]
    owner.wait_for_agent_text(session_id, "You answered")
    assert sum("You answered" in t for t in owner.agent_texts(session_id)) == 1
    # Served by the owner itself: the other replica carried nothing and applied nothing.
    on_other, on_owner = scrape(other), scrape(owner)
    assert value(on_other, "clarion_carried_requests_total") == 0
    assert value(on_other, "clarion_answers_total", outcome="accepted") == 0
    assert value(on_owner, "clarion_answers_total", outcome="accepted") == 1
    # A client that does not follow gets the 307 and nothing is applied: the answer again.
    refused = httpx.post(f"{other.url}{path}", json=answer("db", "postgres"), timeout=60)
    assert refused.status_code == 307 and refused.headers["location"] == f"{owner.url}{path}"
    assert owner.bundle(pending_id)["state"] == "terminal"
