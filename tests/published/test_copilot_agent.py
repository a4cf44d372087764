"""GitHub Copilot CLI (`@github/copilot`, `copilot --acp`), end to end under a real
`clarion serve`, with its own model provider (BYOK, offline) at a scripted OpenAI Chat
Completions API on 127.0.0.1 (openai_server.ChatCompletionsServer). The cases of cases.py, on
SQLite. Copilot names an MCP tool `<server>-<tool>`, puts the date before the person's prompt,
and cannot be given a call timeout for a server passed over ACP, so the detached case uses
Clarion's own wait."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.published import cases
from tests.published.conftest import Rig
from tests.published.test_claude_agent import AGENT_WAIT_S, wait_for_prompt_turn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def _prompt_in(text: str) -> str:
    return re.sub(r"\A<current_datetime>[^<]*</current_datetime>\s*", "", text)


COPILOT = cases.Agent(
    ask_tool="clarion-ask_user_question", write_tool="create", prompt_in=_prompt_in
)


def _create(target: Path) -> dict[str, Any]:
    return {"path": str(target), "file_text": "hello from the agent"}


def test_live_answer_reaches_the_model_once_as_the_contract_json(
    copilot_rig: Callable[..., Rig],
) -> None:
    rig = copilot_rig(COPILOT.ask_then_quote())
    cases.live_answer_reaches_the_model_once(rig, COPILOT)


def test_skip_reaches_the_model_as_a_rejection(copilot_rig: Callable[..., Rig]) -> None:
    rig = copilot_rig(COPILOT.ask_then_quote())
    cases.skip_reaches_the_model_as_a_rejection(rig, COPILOT)


def test_detached_answer_resumes_the_agent_with_the_resume_prompt_once(
    copilot_rig: Callable[..., Rig],
) -> None:
    rig = copilot_rig(COPILOT.ask_then_quote(), server_env={"CLARION_CLARIFICATION_WAIT_S": "2"})
    cases.detached_answer_resumes_the_agent_once(rig, COPILOT)


def test_restart_with_a_question_open_kills_the_agent_and_resumes_a_new_one(
    copilot_rig: Callable[..., Rig],
) -> None:
    rig = copilot_rig(COPILOT.ask_then_quote())
    cases.restart_kills_the_agent_and_resumes_a_new_one(rig, COPILOT)


@pytest.mark.parametrize(
    ("status", "reported"),
    [
        (401, "Error: Authentication failed with provider at"),
        (500, "Last error: 500 scripted failure 500"),
    ],
)
def test_model_api_error_reaches_the_person_only_as_the_agents_text(
    copilot_rig: Callable[..., Rig], status: int, reported: str
) -> None:
    """Copilot retries (a 401 twice, a 5xx five times over about 16 s), then writes the error
    into its reply and ends the turn normally: the person reads it in the transcript, but
    nothing marks the turn failed (no `error` message, `stop_reason` is `end_turn`)."""
    rig = copilot_rig(cases.failing(status))
    session_id = rig.start_agent()
    text = rig.server.wait_for_agent_text(session_id, reported, timeout=AGENT_WAIT_S)
    assert text.count("Error: ") == 1
    turn = wait_for_prompt_turn(rig, session_id)
    assert turn["metadata"]["stop_reason"] == "end_turn"
    assert not [m for m in rig.server.messages(session_id) if m["type"] == "error"]


@pytest.mark.parametrize(
    ("kind", "state", "written"),
    [("allow_once", "approved", True), ("reject_once", "rejected", False)],
)
def test_a_file_write_waits_for_the_persons_permission(
    copilot_rig: Callable[..., Rig], kind: str, state: str, written: bool
) -> None:
    model = cases.WriteNote(COPILOT.write_tool, _create)
    rig = copilot_rig(model)
    cases.file_write_waits_for_the_person(rig, model, kind, state, written)
