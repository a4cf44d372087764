"""Codex (`@zed-industries/codex-acp`), end to end under a real `clarion serve`, against a
scripted OpenAI Responses API on 127.0.0.1 (openai_server.ResponsesServer). The cases of
cases.py, on SQLite. Codex offers an MCP server's tools in a namespace (`mcp__clarion`), asks
before every MCP tool call (Clarion allows its own), and cannot be given a call timeout for a
server passed over ACP, so the detached case uses Clarion's own wait."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.published import cases
from tests.published.conftest import Rig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def _unframe(text: str) -> str:
    """Codex hands the model an MCP tool's result as `Wall time: ... seconds`, `Output:`, then
    the result's content items as JSON; the text item is the tool's text."""
    framed = re.fullmatch(r"Wall time: [\d.]+ seconds\nOutput:\n(.*)", text, re.DOTALL)
    if framed is None:
        return text
    try:
        items = json.loads(framed.group(1))
    except ValueError:
        return framed.group(1)
    if not isinstance(items, list):
        return framed.group(1)
    return "".join(str(i.get("text", "")) for i in items if isinstance(i, dict))


CODEX = cases.Agent(
    ask_tool="mcp__clarion__ask_user_question", write_tool="apply_patch", unframe=_unframe
)


def _patch(target: Path) -> dict[str, Any]:
    """apply_patch is a free-form tool: its input is the patch itself."""
    patch = f"*** Begin Patch\n*** Add File: {target}\n+hello from the agent\n*** End Patch\n"
    return {"input": patch}


def test_live_answer_reaches_the_model_once_as_the_contract_json(
    codex_rig: Callable[..., Rig],
) -> None:
    rig = codex_rig(CODEX.ask_then_quote())
    cases.live_answer_reaches_the_model_once(rig, CODEX)


def test_skip_reaches_the_model_as_a_rejection(codex_rig: Callable[..., Rig]) -> None:
    rig = codex_rig(CODEX.ask_then_quote())
    cases.skip_reaches_the_model_as_a_rejection(rig, CODEX)


def test_detached_answer_resumes_the_agent_with_the_resume_prompt_once(
    codex_rig: Callable[..., Rig],
) -> None:
    rig = codex_rig(CODEX.ask_then_quote(), server_env={"CLARION_CLARIFICATION_WAIT_S": "2"})
    cases.detached_answer_resumes_the_agent_once(rig, CODEX)


def test_restart_with_a_question_open_kills_the_agent_and_resumes_a_new_one(
    codex_rig: Callable[..., Rig],
) -> None:
    rig = codex_rig(CODEX.ask_then_quote())
    cases.restart_kills_the_agent_and_resumes_a_new_one(rig, CODEX)


@pytest.mark.parametrize(
    ("status", "reported"),
    [
        (401, "scripted failure 401"),
        # Codex words a 5xx itself, without the body.
        (500, "We're currently experiencing high demand"),
    ],
)
def test_model_api_failure_ends_the_turn_with_the_agents_error(
    codex_rig: Callable[..., Rig], status: int, reported: str
) -> None:
    rig = codex_rig(cases.failing(status))
    cases.model_failure_shows_as_the_agents_error(rig, reported)


@pytest.mark.parametrize(
    ("kind", "state", "written"),
    [("allow_once", "approved", True), ("reject_once", "rejected", False)],
)
def test_a_file_write_waits_for_the_persons_permission(
    codex_rig: Callable[..., Rig], kind: str, state: str, written: bool
) -> None:
    model = cases.WriteNote(CODEX.write_tool, _patch)
    rig = codex_rig(model)
    cases.file_write_waits_for_the_person(rig, model, kind, state, written)
