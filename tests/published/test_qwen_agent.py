"""Qwen Code (`@qwen-code/qwen-code`, `qwen --acp`), end to end under a real `clarion serve`,
against a scripted OpenAI Chat Completions API on 127.0.0.1 (openai_server.ChatCompletionsServer).
The cases of cases.py, on SQLite. Qwen Code names an MCP tool `mcp__<server>__<tool>` but
hides MCP tools behind its tool_search/tool_call bridge unless its settings list them as
visible (conftest.qwen_setup does); its own built-in question tool, the plain
`ask_user_question`, is left unregistered. It cannot be given a call timeout for a server
passed over ACP, so the detached case uses Clarion's own wait."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.published import cases
from tests.published.conftest import QWEN_ASK_TOOL, Rig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

QWEN = cases.Agent(ask_tool=QWEN_ASK_TOOL, write_tool="write_file")


def _write(target: Path) -> dict[str, Any]:
    return {"file_path": str(target), "content": "hello from the agent"}


def test_live_answer_reaches_the_model_once_as_the_contract_json(
    qwen_rig: Callable[..., Rig],
) -> None:
    rig = qwen_rig(QWEN.ask_then_quote())
    cases.live_answer_reaches_the_model_once(rig, QWEN)


def test_skip_reaches_the_model_as_a_rejection(qwen_rig: Callable[..., Rig]) -> None:
    rig = qwen_rig(QWEN.ask_then_quote())
    cases.skip_reaches_the_model_as_a_rejection(rig, QWEN)


def test_detached_answer_resumes_the_agent_with_the_resume_prompt_once(
    qwen_rig: Callable[..., Rig],
) -> None:
    rig = qwen_rig(QWEN.ask_then_quote(), server_env={"CLARION_CLARIFICATION_WAIT_S": "2"})
    cases.detached_answer_resumes_the_agent_once(rig, QWEN)


def test_restart_with_a_question_open_kills_the_agent_and_resumes_a_new_one(
    qwen_rig: Callable[..., Rig],
) -> None:
    rig = qwen_rig(QWEN.ask_then_quote())
    cases.restart_kills_the_agent_and_resumes_a_new_one(rig, QWEN)


# A client error (401, 400) ends the turn at once. A 5xx Qwen Code retries itself first (7
# attempts with backoff from 1.5 s, about 80 s in all) and then reports it the same way: that
# wait proves nothing more about Clarion, so the suite does not pay it (docs/agents.md).
@pytest.mark.parametrize("status", [401, 400])
def test_model_api_failure_ends_the_turn_with_the_agents_error(
    qwen_rig: Callable[..., Rig], status: int
) -> None:
    rig = qwen_rig(cases.failing(status))
    cases.model_failure_shows_as_the_agents_error(rig, f"scripted failure {status}")


@pytest.mark.parametrize(
    ("kind", "state", "written"),
    [("allow_once", "approved", True), ("reject_once", "rejected", False)],
)
def test_a_file_write_waits_for_the_persons_permission(
    qwen_rig: Callable[..., Rig], kind: str, state: str, written: bool
) -> None:
    model = cases.WriteNote(QWEN.write_tool, _write)
    rig = qwen_rig(model)
    cases.file_write_waits_for_the_person(rig, model, kind, state, written)
