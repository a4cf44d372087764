"""The read/create commands and non-interactive `answer`, against one real server per module."""

from __future__ import annotations

import re

import pytest

from tests.cli.cli_runner import pending_of, run_cli
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.e2e


def test_task_create_and_session_start_print_the_new_ids(shared_server: ServerProcess) -> None:
    created = run_cli(shared_server, "task", "create", "Pick a cache", "-d", "/scenario echo hi")
    assert created.exit_code == 0, created
    task_id = re.search(r"Created task (\S+): Pick a cache", created.stdout)
    assert task_id, created.stdout

    started = run_cli(shared_server, "session", "start", task_id.group(1), "--prompt", "hello")
    assert started.exit_code == 0, started
    session_id = re.search(r"Started session (\S+) on agent builtin", started.stdout)
    assert session_id, started.stdout
    shared_server.wait_for_agent_text(session_id.group(1), "Received: hello")

    quiet = run_cli(shared_server, "task", "create", "Quiet one", "-q")
    assert quiet.exit_code == 0
    assert shared_server.ok("GET", f"/tasks/{quiet.stdout.strip()}")["task"]["title"] == (
        "Quiet one"
    )


def test_session_show_prints_state_agent_and_task_and_no_replica_on_a_single_server(
    shared_server: ServerProcess,
) -> None:
    task_id = shared_server.create_task("Show me")
    session_id = shared_server.start_session(task_id, "hello")
    shared_server.wait_for_agent_text(session_id, "Received: hello")

    shown = run_cli(shared_server, "session", "show", session_id)
    assert shown.exit_code == 0, shown
    assert f"Session {session_id} on agent builtin" in shown.stdout
    assert f"task {task_id}" in shown.stdout
    assert "replica" not in shown.stdout
    assert "replica_id" not in shared_server.ok("GET", f"/task-sessions/{session_id}")["session"]

    missing = run_cli(shared_server, "session", "show", "no-such-session")
    assert missing.exit_code == 3, missing


def test_tasks_table_marks_only_tasks_waiting_for_an_answer(shared_server: ServerProcess) -> None:
    asking, _, _ = pending_of(shared_server, "/scenario ask")
    calm = shared_server.create_task("Nothing to ask")

    def row(task_id: str) -> str:
        shown = run_cli(shared_server, "tasks")
        assert shown.exit_code == 0, shown
        return next(line for line in shown.stdout.splitlines() if task_id in line)

    assert "●" in row(asking) and "clarification" in row(asking)
    assert "●" not in row(calm) and "clarification" not in row(calm)


def test_questions_lists_answerable_bundles_and_drops_answered_ones(
    shared_server: ServerProcess,
) -> None:
    _, _, pending_id = pending_of(shared_server, "/scenario ask")
    shared_server.wait_for_state(pending_id, "active_live")

    listed = run_cli(shared_server, "questions")
    assert listed.exit_code == 0, listed
    assert f"{pending_id}  active_live" in listed.stdout
    assert "Which database should the service use?" in listed.stdout
    assert "1) PostgreSQL" in listed.stdout and "3) SQLite" in listed.stdout
    assert f"clarion answer {pending_id}" in listed.stdout

    assert shared_server.respond(pending_id, {"rejected": True, "reject_reason": "x"}).is_success
    assert pending_id not in run_cli(shared_server, "questions").stdout


def test_answer_with_option_flag_reaches_the_live_agent(shared_server: ServerProcess) -> None:
    _, session_id, pending_id = pending_of(shared_server, "/scenario ask")

    answered = run_cli(shared_server, "answer", pending_id, "--option", "db=PostgreSQL")
    assert answered.exit_code == 0, answered
    assert "Answered: db: postgres" in answered.stdout
    assert "handed to the agent's waiting question call" in answered.stdout
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert '"selected_options": ["postgres"]' in reply


def test_second_answer_is_a_conflict_that_names_the_winner(shared_server: ServerProcess) -> None:
    _, _, pending_id = pending_of(shared_server, "/scenario ask")
    assert run_cli(shared_server, "answer", pending_id, "-o", "db=sqlite").exit_code == 0

    late = run_cli(shared_server, "answer", pending_id, "-o", "db=mongodb")
    assert late.exit_code == 4, late
    assert "not_active, HTTP 409" in late.stderr
    assert "state: terminal" in late.stderr
    assert "the answer that won: db: sqlite" in late.stderr
    assert "Traceback" not in late.stderr + late.stdout


def test_every_question_of_a_multi_bundle_takes_flags_by_id_label_number_or_text(
    shared_server: ServerProcess,
) -> None:
    _, session_id, pending_id = pending_of(shared_server, "/scenario ask-multi")

    partial = run_cli(shared_server, "answer", pending_id, "-o", "db=postgres")
    assert partial.exit_code == 2, partial
    assert "no answer for question(s) language, deploy" in partial.stderr
    unknown = run_cli(shared_server, "answer", pending_id, "-o", "language=cobol")
    assert unknown.exit_code == 2
    assert "has no option 'cobol'" in unknown.stderr and "rust (Rust)" in unknown.stderr
    assert shared_server.bundle(pending_id)["state"] == "active_live"  # nothing was sent

    answered = run_cli(
        shared_server, "answer", pending_id,
        "-o", "db=postgres", "-o", "language=3", "-t", "deploy=on a Raspberry Pi",
    )  # fmt: skip
    assert answered.exit_code == 0, answered
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert '"language": {"selected_options": ["rust"]' in reply
    assert '"custom_text": "on a Raspberry Pi"' in reply


def test_skip_rejects_the_bundle_with_the_reason(shared_server: ServerProcess) -> None:
    _, session_id, pending_id = pending_of(shared_server, "/scenario ask")

    skipped = run_cli(shared_server, "answer", pending_id, "--skip", "--reason", "not now")
    assert skipped.exit_code == 0, skipped
    assert "Skipped: not now" in skipped.stdout
    assert shared_server.bundle(pending_id)["state"] == "terminal"
    reply = shared_server.wait_for_agent_text(session_id, "You answered:")
    assert '"rejected": true' in reply and "not now" in reply


def test_answer_without_flags_off_a_terminal_is_a_usage_error(
    shared_server: ServerProcess,
) -> None:
    _, _, pending_id = pending_of(shared_server, "/scenario ask")
    refused = run_cli(shared_server, "answer", pending_id)
    assert refused.exit_code == 2
    assert "stdin is not a terminal" in refused.stderr
    assert run_cli(shared_server, "answer", pending_id, "--skip", "-o", "db=1").exit_code == 2
    assert shared_server.bundle(pending_id)["state"] == "active_live"


def test_unknown_ids_are_not_found_without_a_traceback(shared_server: ServerProcess) -> None:
    missing = run_cli(shared_server, "answer", "no-such-bundle", "--skip")
    assert missing.exit_code == 3
    assert "clarification request not found (not_found, HTTP 404)" in missing.stderr
    no_task = run_cli(shared_server, "session", "start", "no-such-task")
    assert no_task.exit_code == 3, no_task
    assert "Traceback" not in missing.stderr + no_task.stderr


def test_unknown_agent_is_a_usage_error_naming_the_field(shared_server: ServerProcess) -> None:
    task_id = shared_server.create_task("Agent typo")
    refused = run_cli(shared_server, "session", "start", task_id, "--agent", "nope")
    assert refused.exit_code == 2, refused
    assert "field: agent" in refused.stderr


def test_no_server_exits_5_with_a_hint() -> None:
    nobody = ServerProcess(database_url="unused", workdir=None)  # type: ignore[arg-type]
    result = run_cli(nobody, "tasks")
    assert result.exit_code == 5
    assert f"cannot reach the Clarion server at {nobody.url}" in result.stderr
    assert "clarion serve" in result.stderr
