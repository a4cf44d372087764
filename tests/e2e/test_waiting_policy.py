"""The waiting policy through real servers and the built-in agent (`/scenario ask-default`),
with a short policy in a config file: a live expiry, a deadline that fell due while the server
was down (kill -9; it fires once after the restart), and a cluster whose owner dies before the
deadline (the adopter fires it once)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.e2e.cluster import replica_id, session_owner, wait_role
from tests.e2e.harness import RESUME_MARK, ServerProcess, wait_until

DBS = [pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]


def _config(path: Path, expire: str, on_expiry: str) -> Path:
    path.write_text(
        f'[agents.builtin.waiting]\nexpire_after = "{expire}"\non_expiry = "{on_expiry}"\n'
    )
    return path


def _configured(server: ServerProcess, expire: str, on_expiry: str) -> ServerProcess:
    config = _config(server.workdir / "clarion.toml", expire, on_expiry)
    server.args += ["--config", str(config)]
    return server


def _wait_past(moment: str) -> None:
    """Until the wall clock is past `moment` (a deadline on the server's clock)."""
    due = datetime.fromisoformat(moment)
    wait_until(lambda: datetime.now(UTC) > due, timeout=120, what="the deadline to pass")


@pytest.mark.parametrize("db", DBS)
def test_a_live_question_expires_with_its_default_and_the_agent_goes_on(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = _configured(make_server(db=db), "3s", "default")
    server.start()
    session_id = server.start_session(server.create_task(), "/scenario ask-default")
    pending_id = server.wait_for_bundle(session_id)
    read = server.bundle(pending_id)
    assert read["on_expiry"] == "default" and read["expires_at"] is not None
    assert [o.get("default", False) for o in read["questions"][0]["options"]] == [
        False,
        False,
        True,
    ]

    reply = server.wait_for_agent_text(session_id, "You answered:", timeout=60)

    result = json.loads(reply.removeprefix("You answered: "))
    assert result == {"db": {"selected_options": ["sqlite"], "custom_text": ""}}
    read = server.bundle(pending_id)
    assert read["state"] == "terminal" and read["answered_by"] == "policy"
    late = server.respond(pending_id, {"answers": [], "rejected": True, "reject_reason": "x"})
    assert late.status_code == 409
    assert late.json()["error"]["response"]["answers"][0]["selected_options"] == ["sqlite"]


@pytest.mark.parametrize("db", DBS)
def test_a_deadline_due_while_the_server_was_killed_fires_once_after_restart(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = _configured(make_server(db=db), "6s", "default")
    server.start()
    session_id = server.start_session(server.create_task(), "/scenario ask-default t=1")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_agent_text(session_id, "No answer yet")
    expires_at = server.bundle(pending_id)["expires_at"]
    assert server.bundle(pending_id)["state"] == "active_detached"

    server.kill()  # SIGKILL, before the deadline
    _wait_past(expires_at)
    server.start()

    server.wait_for_agent_text(session_id, RESUME_MARK, timeout=60)
    read = server.bundle(pending_id)
    assert read["state"] == "terminal" and read["answered_by"] == "policy"
    # Once: a second restart finds nothing left to fire.
    server.stop()
    server.start()
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.resume_prompts_seen(session_id) == 1


@pytest.mark.postgres
def test_the_adopter_fires_the_deadline_of_a_dead_owners_question_once(
    expiring_replicas: Callable[..., ServerProcess],
) -> None:
    first, second = expiring_replicas(), expiring_replicas()
    for server in (first, second):
        _configured(server, "10s", "default")
    first.start(wait_ready=False)
    wait_role(first, "active")
    second.start(wait_ready=False)
    wait_role(second, "active")
    first_id, second_id = replica_id(first), replica_id(second)
    session_id = first.start_session(first.create_task(), "/scenario ask-default")
    pending_id = first.wait_for_bundle(session_id)
    assert session_owner(second, session_id) == first_id

    first.kill()  # before the deadline: its question, and its deadline, go to the adopter

    wait_until(
        lambda: session_owner(second, session_id) == second_id,
        timeout=60,
        what="the survivor adopting the session",
    )
    second.wait_for_agent_text(session_id, RESUME_MARK, timeout=90)
    read = second.bundle(pending_id)
    assert read["state"] == "terminal" and read["answered_by"] == "policy"
    late = second.respond(pending_id, {"answers": [], "rejected": True, "reject_reason": "x"})
    assert late.status_code == 409, "the expiry won once; nothing claims it again"
    assert second.resume_prompts_seen(session_id) == 1


def test_clarion_questions_shows_the_deadline_and_what_follows(
    make_server: Callable[..., ServerProcess],
) -> None:
    from tests.cli.cli_runner import run_cli

    server = _configured(make_server(), "8h", "skip")
    server.start()
    session_id = server.start_session(server.create_task(), "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)

    listed = run_cli(server, "questions")

    assert listed.exit_code == 0, listed
    assert f"{pending_id}  active_live" in listed.stdout
    assert "expires in 8 h" in listed.stdout and "then Skip" in listed.stdout
