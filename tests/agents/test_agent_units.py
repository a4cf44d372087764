"""Pure pieces of the agent layer: scenario parsing, frame mapping, environment, permissions."""

from __future__ import annotations

import acp
import pytest
from acp.schema import ToolCallUpdate

from clarion.agents.client import deny_all
from clarion.agents.frames import to_output
from clarion.agents.process import build_env
from clarion.agents.scenarios import ScenarioError, parse_scenario
from clarion.ports import AgentOutput


def test_ordinary_prompt_is_not_a_scenario() -> None:
    assert parse_scenario("hello /scenario echo") is None


def test_scenario_line_gives_name_args_and_rest() -> None:
    call = parse_scenario("/scenario stream n=5 ms=10\nmore text")
    assert call is not None
    assert call.name == "stream"
    assert call.args == {"n": "5", "ms": "10"}
    assert call.rest == "n=5 ms=10\nmore text"


def test_scenario_without_name_is_an_error() -> None:
    with pytest.raises(ScenarioError):
        parse_scenario("/scenario")


def test_frames_map_message_thought_and_tool_calls() -> None:
    assert to_output("s", 3, acp.update_agent_message_text("hi")) == AgentOutput(
        "s", 3, "message", text="hi"
    )
    assert to_output("s", 3, acp.update_agent_thought_text("hm")) == AgentOutput(
        "s", 3, "thought", text="hm"
    )
    start = to_output("s", 3, acp.start_tool_call("c1", "Read", kind="read", status="pending"))
    assert start == AgentOutput(
        "s",
        3,
        "tool_call",
        data={"tool_call_id": "c1", "title": "Read", "kind": "read", "status": "pending"},
    )
    update = to_output("s", 3, acp.update_tool_call("c1", status="completed"))
    assert update is not None
    assert update.kind == "tool_call_update"
    assert update.data["status"] == "completed"
    assert to_output("s", 3, acp.update_plan([])) is None


def test_env_is_a_sane_base_plus_base_env_plus_profile() -> None:
    parent = {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "SECRET": "x"}
    env = build_env({"API_KEY": "k", "LANG": "fr"}, {"EXTRA": "1"}, parent)
    assert env == {"PATH": "/bin", "HOME": "/h", "LANG": "fr", "EXTRA": "1", "API_KEY": "k"}


async def test_permission_requests_are_refused() -> None:
    response = await deny_all("s", ToolCallUpdate(tool_call_id="c", title="rm -rf"), [])
    assert response.outcome.outcome == "cancelled"
