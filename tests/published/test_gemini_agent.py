"""Gemini CLI (`gemini --acp`), end to end under a real `clarion serve`, against a scripted Gemini
API on 127.0.0.1 (gemini_server.py). The core cases of test_claude_agent.py, on SQLite (the
Claude Code tests cover PostgreSQL and the variants); where Gemini CLI differs:
its MCP tool timeout cannot be set for a server given over ACP, so the detached case uses
Clarion's own wait timeout instead of the agent giving up."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.harness import SKIP, answer, wait_until
from tests.published.conftest import GEMINI_ASK_TOOL, Rig
from tests.published.model_server import RESUME_MARK, Reply, Turn, ask_then_quote
from tests.published.test_claude_agent import (
    AGENT_WAIT_S,
    ASK_DB,
    DB_QUESTION,
    WriteNote,
    _agent_pids,
    _group_members,
    _option,
    _pending_permission,
    _respond_ok,
    resume_prompt_of,
    wait_for_error_messages,
    wait_for_prompt_turn,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

EXPECTED = {"db": {"selected_options": ["postgres"], "custom_text": ""}}


def _ask_results(rig: Rig) -> list[Any]:
    """The answers the model received as function responses, parsed. Gemini CLI frames an MCP
    tool's text in <untrusted_context> tags; inside is the contract's JSON, once."""
    results = [r for r in rig.model.tool_results() if r.name == GEMINI_ASK_TOOL]
    assert all(not r.is_error for r in results), results
    parsed = []
    for result in results:
        inner = result.text.strip().removeprefix("<untrusted_context>")
        parsed.append(json.loads(inner.removesuffix("</untrusted_context>").strip()))
    return parsed


def _live_question(rig: Rig, session_id: str) -> str:
    pending_id = rig.server.wait_for_bundle(session_id, timeout=AGENT_WAIT_S)
    rig.server.wait_for_state(pending_id, "active_live")
    return pending_id


def test_live_answer_reaches_the_model_once_as_the_contract_json(
    gemini_rig: Callable[..., Rig],
) -> None:
    rig = gemini_rig(ask_then_quote(GEMINI_ASK_TOOL, ASK_DB))
    session_id = rig.start_agent()
    pending_id = _live_question(rig, session_id)
    _respond_ok(rig.server, pending_id, answer("db", "postgres"))
    rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    assert _ask_results(rig) == [EXPECTED]


def test_skip_reaches_the_model_as_a_rejection(gemini_rig: Callable[..., Rig]) -> None:
    rig = gemini_rig(ask_then_quote(GEMINI_ASK_TOOL, ASK_DB))
    session_id = rig.start_agent()
    pending_id = _live_question(rig, session_id)
    _respond_ok(rig.server, pending_id, SKIP)
    rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    assert _ask_results(rig) == [{"rejected": True, "reject_reason": "User skipped"}]


def _assert_resume_prompt_received_once(rig: Rig) -> None:
    (received,) = rig.model.prompts_containing(RESUME_MARK)
    prompt = resume_prompt_of(received)
    assert prompt.startswith(RESUME_MARK)
    assert str(DB_QUESTION["prompt"]) in prompt and "SQLite" in prompt
    assert rig.model.user_messages_containing(RESUME_MARK) == 1


def test_detached_answer_resumes_the_agent_with_the_resume_prompt_once(
    gemini_rig: Callable[..., Rig],
) -> None:
    rig = gemini_rig(
        ask_then_quote(GEMINI_ASK_TOOL, ASK_DB),
        server_env={"CLARION_CLARIFICATION_WAIT_S": "2"},
    )
    session_id = rig.start_agent()
    pending_id = rig.server.wait_for_bundle(session_id, timeout=AGENT_WAIT_S)
    rig.server.wait_for_state(pending_id, "active_detached", timeout=AGENT_WAIT_S)
    rig.server.wait_for_agent_text(session_id, "Tool error: ", timeout=AGENT_WAIT_S)

    body = _respond_ok(rig.server, pending_id, answer("db", "sqlite"))
    assert body["resumed"] is True
    rig.server.wait_for_agent_text(session_id, "Resumed with: ", timeout=AGENT_WAIT_S)
    _assert_resume_prompt_received_once(rig)


def test_restart_with_a_question_open_kills_the_agent_and_resumes_a_new_one(
    gemini_rig: Callable[..., Rig],
) -> None:
    rig = gemini_rig(ask_then_quote(GEMINI_ASK_TOOL, ASK_DB))
    session_id = rig.start_agent()
    pending_id = _live_question(rig, session_id)
    (agent_pid,) = _agent_pids(rig.server)
    assert agent_pid in _group_members(agent_pid)

    rig.server.kill()
    wait_until(lambda: not _group_members(agent_pid), timeout=20, what="agent tree gone")

    rig.server.start()
    rig.server.wait_for_state(pending_id, "active_detached")
    assert _respond_ok(rig.server, pending_id, answer("db", "sqlite"))["resumed"] is True
    rig.server.wait_for_agent_text(session_id, "Resumed with: ", timeout=AGENT_WAIT_S)
    _assert_resume_prompt_received_once(rig)


@pytest.mark.parametrize("status", [401, 500])
def test_model_api_failure_ends_the_turn_with_the_agents_error(
    gemini_rig: Callable[..., Rig], status: int
) -> None:
    def failing(turn: Turn) -> Reply:
        return Reply(status=status, text=f"scripted failure {status}")

    rig = gemini_rig(failing)
    session_id = rig.start_agent()

    turn = wait_for_prompt_turn(rig, session_id)
    assert turn["metadata"]["stop_reason"] == "error"
    assert f"scripted failure {status}" in turn["metadata"]["error"]
    # The person sees it too: an `error` message in the transcript carrying the same reason.
    errors = wait_for_error_messages(rig, session_id)
    assert all(f"scripted failure {status}" in m["content"] for m in errors), errors


@pytest.mark.parametrize(
    ("kind", "state", "written"),
    [("allow_once", "approved", True), ("reject_once", "rejected", False)],
)
def test_a_file_write_waits_for_the_persons_permission(
    gemini_rig: Callable[..., Rig], kind: str, state: str, written: bool
) -> None:
    model = WriteNote("write_file")
    rig = gemini_rig(model)
    # Gemini CLI writes only inside its workspace: the agent's working directory.
    target = model.target = rig.workdir / "note.txt"
    session_id = rig.start_agent("Write a note.")

    row = _pending_permission(rig, session_id)
    assert row["metadata"]["tool_call"]["kind"] == "edit"
    assert not target.exists(), "the agent wrote before anyone allowed it"

    response = rig.server.request(
        "POST", f"/permission/{row['id']}/respond", json={"option_id": _option(row, kind)}
    )
    assert response.status_code == 200, response.text
    assert response.json()["state"] == state

    wait_for_prompt_turn(rig, session_id)
    assert target.exists() is written
    if written:
        assert target.read_text() == "hello from the agent"
        rig.server.wait_for_agent_text(session_id, "Wrote: ", timeout=AGENT_WAIT_S)
