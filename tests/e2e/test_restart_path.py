"""The detached answer's restart path: a crash while the agent starts, an ambiguous dispatch
made visible and resent by the person, and agents that keep their conversation across server
restarts. Real `clarion serve` processes killed with SIGKILL and started again on the same
database; the built-in agent is a real ACP subprocess."""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.cli.cli_runner import run_cli
from tests.e2e.harness import (
    RESUME_MARK,
    ServerProcess,
    answer,
    answer_survives_a_crash_while_the_agent_starts,
    wait_until,
)
from tests.ops.scrape import scrape, value

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def _conversational_turns(server: ServerProcess, session_id: str) -> list[dict[str, object]]:
    return [t for t in server.turns(session_id) if not t["metadata"].get("lifecycle_only")]


def _question_left_by_a_restart(
    server: ServerProcess, agent: str = "builtin", failpoints: str = ""
) -> tuple[str, str]:
    """A detached question whose agent is gone (the server was killed and started again, with
    `failpoints`): the next answer must start the agent again."""
    session_id = server.start_session(
        server.create_task(), "/scenario ask-timeout t=1", agent=agent
    )
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_agent_text(session_id, "No answer yet; ending turn.")
    server.wait_for_state(pending_id, "active_detached")
    server.kill()
    server.start(failpoints=failpoints)
    assert server.bundle(pending_id)["state"] == "active_detached"
    return session_id, pending_id


def _respond_in_background(server: ServerProcess, pending_id: str) -> threading.Thread:
    def post() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the server is killed under it
            server.respond(pending_id, answer("db", "sqlite"))

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("db", DBS)
def test_crash_while_the_agent_starts_leaves_the_answer_answerable_and_resumes_once(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start()
    session_id, pending_id = _question_left_by_a_restart(
        server, failpoints="resume.agent_ready=crash"
    )

    answer_survives_a_crash_while_the_agent_starts(server, session_id, pending_id)


def _slow_agent_config(workdir: Path, seconds: float) -> Path:
    config = workdir / "slow.toml"
    command = f"sleep {seconds}; exec {sys.executable} -m clarion.agents.builtin"
    config.write_text(f'[agents.slow]\ncommand = ["sh", "-c", "{command}"]\n')
    return config


@pytest.mark.parametrize("db", DBS)
def test_kill_while_a_slow_agent_boots_leaves_the_answer_answerable(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.args = ["--config", str(_slow_agent_config(server.workdir, 4))]
    server.start()
    session_id, pending_id = _question_left_by_a_restart(server, agent="slow")

    responder = _respond_in_background(server, pending_id)
    # The reservation is committed before the agent is started; the agent takes seconds to
    # boot, so a kill the moment the reservation is logged lands while it boots.
    wait_until(lambda: "successor reserved" in server.logs(), timeout=30, what="reservation")
    assert "resume attempt marked" not in server.logs()
    server.kill()
    responder.join(timeout=30)
    _slow_agent_config(server.workdir, 0)  # the kill is done: the next start need not wait
    server.start()

    assert server.bundle(pending_id)["state"] == "active_detached"
    again = server.respond(pending_id, answer("db", "sqlite"))
    assert again.status_code == 200, again.text
    server.wait_for_agent_text(session_id, RESUME_MARK, timeout=60)
    assert server.resume_prompts_seen(session_id) == 1


@pytest.mark.parametrize("db", DBS)
def test_crash_after_the_attempt_marker_reads_ambiguous_and_one_resend_starts_one_turn(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start()
    session_id, pending_id = _question_left_by_a_restart(
        server, failpoints="resume.after_attempt=crash"
    )
    with pytest.raises(httpx.HTTPError):
        server.respond(pending_id, answer("db", "sqlite"))
    assert server.wait_exit() == 137
    server.start()

    bundle = server.bundle(pending_id)
    assert bundle["state"] == "terminal"
    assert bundle["delivery"] == "ambiguous"
    assert server.resume_prompts_seen(session_id) == 0
    refused = server.respond(pending_id, answer("db", "sqlite"))
    assert refused.status_code == 409
    turns_before = len(_conversational_turns(server, session_id))
    assert pending_id not in run_cli(server, "questions").stdout, "not answerable"
    listed = run_cli(server, "questions", "--all")
    assert listed.exit_code == 0, listed
    assert "may not have received" in listed.stdout
    assert f"clarion resend {pending_id}" in listed.stdout

    resent = run_cli(server, "resend", pending_id)

    assert resent.exit_code == 0, resent
    match = re.search(r"Answer sent again in turn (\S+)\.", resent.stdout)
    assert match, resent.stdout
    turn_id = match.group(1)
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.resume_prompts_seen(session_id) == 1
    turns = _conversational_turns(server, session_id)
    assert len(turns) == turns_before + 1 and turns[-1]["id"] == turn_id
    settled = server.bundle(pending_id)
    assert settled["delivery"] == "delivered"
    assert all(r["metadata"]["resent_turn_id"] == turn_id for r in settled["rows"])
    twice = server.request("POST", f"/clarification/{pending_id}/resend")
    assert twice.status_code == 409
    assert twice.json()["error"]["delivery"] == "delivered"
    assert server.resume_prompts_seen(session_id) == 1


def test_resend_is_refused_for_an_answer_that_was_delivered(server: ServerProcess) -> None:
    session_id = server.start_session(server.create_task(), "/scenario ask")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_live")
    assert server.respond(pending_id, answer("db", "sqlite")).status_code == 200
    assert server.bundle(pending_id)["delivery"] == "delivered"

    refused = server.request("POST", f"/clarification/{pending_id}/resend")

    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "not_active"
    assert refused.json()["error"]["delivery"] == "delivered"
    missing = server.request("POST", "/clarification/nope/resend")
    assert missing.status_code == 404


@pytest.mark.parametrize("db", DBS)
def test_publication_failure_after_acceptance_reads_terminal_at_once(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start(failpoints="resume.publish=error")
    session_id = server.start_session(server.create_task(), "/scenario ask-timeout t=1")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_detached")
    server.wait_for_agent_text(session_id, "No answer yet; ending turn.")

    response = server.respond(pending_id, answer("db", "sqlite"))

    assert response.status_code == 500
    assert response.json()["error"]["code"] == "dispatch_not_finalized"
    assert value(scrape(server), "clarion_answers_total", outcome="error") == 1
    bundle = server.bundle(pending_id)
    assert bundle["state"] == "terminal"
    assert bundle["delivery"] == "delivered"
    assert all("response_delivery_pending" not in r["metadata"] for r in bundle["rows"])
    server.wait_for_agent_text(session_id, RESUME_MARK)
    server.kill()
    server.start()
    assert server.bundle(pending_id)["state"] == "terminal"
    assert server.bundle(pending_id)["delivery"] == "delivered"
    assert server.resume_prompts_seen(session_id) == 1


@pytest.mark.parametrize("db", DBS)
def test_restarted_agent_remembers_its_conversation_through_session_load(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start()
    task_id = server.create_task()
    session_id = server.start_session(task_id, "Remember the blue door")
    server.wait_for_agent_text(session_id, "Received: Remember the blue door")
    server.kill()
    server.start()

    server.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "/scenario recall"})

    server.wait_for_agent_text(session_id, "Remembered: Remember the blue door")
    lifecycle = [t for t in server.turns(session_id) if t["metadata"].get("lifecycle_only")]
    assert [t["metadata"]["agent_context"] for t in lifecycle] == ["new", "loaded"]
    assert not any("Recap of the conversation" in t for t in server.agent_texts(session_id))


def test_agent_without_session_load_gets_a_recap_of_the_transcript(
    make_server: Callable[..., ServerProcess],
) -> None:
    server = make_server()
    config = server.workdir / "forgetful.toml"
    config.write_text(
        "[agents.forgetful]\n"
        f'command = ["{sys.executable}", "-m", "clarion.agents.builtin"]\n'
        'env = { CLARION_BUILTIN_LOAD_SESSION = "0" }\n'
    )
    server.args = ["--config", str(config)]
    server.start()
    session_id = server.start_session(
        server.create_task(), "Remember the blue door", agent="forgetful"
    )
    server.wait_for_agent_text(session_id, "Received: Remember the blue door")
    server.kill()
    server.start()

    server.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "Go on"})

    reply = server.wait_for_agent_text(session_id, "Recap of the conversation")
    assert "User: Remember the blue door" in reply
    assert "Agent: Received: Remember the blue door" in reply
    assert reply.rstrip().endswith("Go on")
    user_prompts = [
        m["content"]
        for m in server.messages(session_id)
        if m["author_type"] == "user" and m["type"] == "message"
    ]
    assert user_prompts == ["Remember the blue door", "Go on"], "the recap is not transcript"


@pytest.mark.parametrize("db", DBS)
def test_live_answer_killed_before_the_agent_spoke_reads_ambiguous_and_can_be_resent(
    make_server: Callable[..., ServerProcess], db: str
) -> None:
    server = make_server(db=db)
    server.start()
    # ask-silent: the agent takes the answer and says nothing, holding its turn open, so
    # nothing durable shows that it read the answer when the server dies.
    session_id = server.start_session(server.create_task(), "/scenario ask-silent")
    pending_id = server.wait_for_bundle(session_id)
    server.wait_for_state(pending_id, "active_live")
    assert server.respond(pending_id, answer("db", "sqlite")).status_code == 200
    assert server.bundle(pending_id)["delivery"] == "delivered"
    server.kill()
    server.start()

    bundle = server.bundle(pending_id)
    assert bundle["state"] == "terminal"
    assert bundle["delivery"] == "ambiguous"
    resent = server.request("POST", f"/clarification/{pending_id}/resend")
    assert resent.status_code == 200, resent.text
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.resume_prompts_seen(session_id) == 1
