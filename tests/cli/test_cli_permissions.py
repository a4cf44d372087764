"""`clarion questions` with permission requests, `clarion allow|reject [--always]`, and
`clarion watch` showing permission requests and agent errors, against real servers."""

from __future__ import annotations

import signal

import pytest

from tests.cli.cli_runner import run_cli
from tests.cli.test_watch import _next_matching, watching
from tests.e2e.harness import ServerProcess
from tests.e2e.permission_steps import permission, wait_for_permission

pytestmark = pytest.mark.e2e


def _asking(server: ServerProcess) -> tuple[str, str]:
    session_id = server.start_session(server.create_task("Edit docs"), "/scenario permission")
    return session_id, str(wait_for_permission(server, session_id)["id"])


def test_questions_lists_a_pending_permission_request(shared_server: ServerProcess) -> None:
    session_id, message_id = _asking(shared_server)

    listed = run_cli(shared_server, "questions")

    assert listed.exit_code == 0, listed
    assert f"{message_id}  permission" in listed.stdout
    assert "Edit README.md" in listed.stdout and "(kind edit)" in listed.stdout
    assert "README.md" in listed.stdout  # the tool's input, shown bounded
    assert "[allow-always, allow_always]" in listed.stdout
    assert f"clarion allow {message_id}" in listed.stdout
    assert run_cli(shared_server, "reject", message_id).exit_code == 0
    assert message_id not in run_cli(shared_server, "questions").stdout
    shared_server.wait_for_agent_text(session_id, "Permission: reject")


@pytest.mark.parametrize(
    ("command", "always", "option"),
    [
        ("allow", False, "allow"),
        ("allow", True, "allow-always"),
        ("reject", False, "reject"),
        ("reject", True, "reject-always"),
    ],
)
def test_allow_and_reject_pick_the_agents_option(
    shared_server: ServerProcess, command: str, always: bool, option: str
) -> None:
    session_id, message_id = _asking(shared_server)

    done = run_cli(shared_server, command, message_id, *(["--always"] if always else []))

    assert done.exit_code == 0, done
    assert f"[{option}]" in done.stdout
    shared_server.wait_for_agent_text(session_id, f"Permission: {option}")
    assert permission(shared_server, message_id)["decision"]["option_id"] == option


def test_a_second_decision_exits_with_the_conflict_code(shared_server: ServerProcess) -> None:
    _, message_id = _asking(shared_server)
    assert run_cli(shared_server, "allow", message_id).exit_code == 0

    again = run_cli(shared_server, "reject", message_id)

    assert again.exit_code == 4, again
    assert run_cli(shared_server, "allow", "no-such-request").exit_code == 3


def test_watch_prints_permission_requests_and_agent_errors(shared_server: ServerProcess) -> None:
    task_id = shared_server.create_task("Watched failures")
    with watching(shared_server, "--task", task_id) as (proc, out, err):
        _next_matching(err, "Watching")
        session_id = shared_server.start_session(task_id, "/scenario permission")
        message_id = str(wait_for_permission(shared_server, session_id)["id"])

        asked = _next_matching(out, "PERMISSION")
        assert "Edit README.md" in asked and f"clarion allow {message_id}" in asked
        assert run_cli(shared_server, "allow", message_id).exit_code == 0
        decided = _next_matching(out, "is approved")
        assert ": allow by user" in decided

        failing = shared_server.start_session(task_id, "/scenario fail the model is overloaded")
        error = _next_matching(out, "ERROR")
        assert failing in error and "the model is overloaded" in error

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
