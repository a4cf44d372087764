"""The cases every published agent goes through, one per column of docs/agents.md's table, for
the agents whose model API has no error flag on a tool result (OpenAI's: Codex, Qwen Code,
GitHub Copilot CLI). Each agent's test module calls them with its rig and its names for
Clarion's question tool and its own file tool; test_claude_agent.py holds the originals, with
the Claude Code variants.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.harness import SKIP, answer, wait_until
from tests.published.conftest import Rig
from tests.published.scripted import RESUME_MARK, Reply, Script, Turn
from tests.published.test_claude_agent import (
    AGENT_WAIT_S,
    ASK_DB,
    DB_QUESTION,
    _agent_pids,
    _group_members,
    _option,
    _pending_permission,
    _respond_ok,
    resume_prompt_of,
    wait_for_error_messages,
    wait_for_prompt_turn,
)

EXPECTED = {"db": {"selected_options": ["postgres"], "custom_text": ""}}


def _as_is(text: str) -> str:
    return text


@dataclass(frozen=True)
class Agent:
    """What differs between agents: the names the model sees, and the framing (if any) the
    agent puts around an MCP tool's text before the model reads it."""

    ask_tool: str  # Clarion's question tool
    write_tool: str  # the agent's own file-writing tool
    unframe: Callable[[str], str] = field(default=_as_is)
    # The person's prompt in the user message the agent sends (some add context before it).
    prompt_in: Callable[[str], str] = field(default=_as_is)

    def contract_json(self, text: str) -> Any | None:
        """The contract's answer JSON in a tool result, or None when it holds something else
        (the "question stays open" error): these APIs do not mark a result as an error."""
        try:
            parsed = json.loads(self.unframe(text))
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None

    def answers(self, rig: Rig) -> list[Any]:
        """The answers to Clarion's question tool the model received, parsed, in order; inside
        the agent's framing, each is the contract's JSON exactly, once."""
        results = [r for r in rig.model.tool_results() if r.name == self.ask_tool]
        parsed = [self.contract_json(r.text) for r in results]
        assert all(p is not None for p in parsed), results
        return parsed

    def ask_then_quote(self) -> Script:
        """Ask the database question; quote an answer back as `Got: ` and anything else as
        `Tool error: `; quote a resume prompt back."""

        def play(turn: Turn) -> Reply:
            if turn.tool_results:
                text = turn.tool_results[-1].text
                known = self.contract_json(text) is not None
                return Reply(text=("Got: " if known else "Tool error: ") + self.unframe(text))
            if RESUME_MARK in turn.prompt:
                return Reply(text="Resumed with: " + turn.prompt)
            return Reply(tool=self.ask_tool, tool_input=ASK_DB)

        return play


def _live_question(rig: Rig, session_id: str) -> str:
    pending_id = rig.server.wait_for_bundle(session_id, timeout=AGENT_WAIT_S)
    rig.server.wait_for_state(pending_id, "active_live")
    return pending_id


def live_answer_reaches_the_model_once(rig: Rig, agent: Agent) -> None:
    session_id = rig.start_agent()
    pending_id = _live_question(rig, session_id)
    assert rig.server.bundle(pending_id)["questions"][0]["prompt"] == DB_QUESTION["prompt"]
    body = _respond_ok(rig.server, pending_id, answer("db", "postgres"))
    assert body["status"] == "answered" and body["resumed"] is False
    text = rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    assert json.loads(text.removeprefix("Got: ")) == EXPECTED
    assert agent.answers(rig) == [EXPECTED]
    assert rig.server.bundle(pending_id)["state"] == "terminal"


def skip_reaches_the_model_as_a_rejection(rig: Rig, agent: Agent) -> None:
    session_id = rig.start_agent()
    pending_id = _live_question(rig, session_id)
    assert _respond_ok(rig.server, pending_id, SKIP)["status"] == "rejected"
    rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    assert agent.answers(rig) == [{"rejected": True, "reject_reason": "User skipped"}]


def assert_resume_prompt_received_once(rig: Rig, agent: Agent) -> None:
    (received,) = rig.model.prompts_containing(RESUME_MARK)
    prompt = resume_prompt_of(agent.prompt_in(received))
    assert prompt.startswith(RESUME_MARK)
    assert str(DB_QUESTION["prompt"]) in prompt and "SQLite" in prompt
    assert prompt.rstrip().endswith("Please continue with this information.")
    assert rig.model.user_messages_containing(RESUME_MARK) == 1


def detached_answer_resumes_the_agent_once(rig: Rig, agent: Agent) -> None:
    """The rig's Clarion gives up waiting on the call after a moment: the tool returns the
    "question stays open" error, the model ends its turn, and the answer resumes the agent."""
    session_id = rig.start_agent()
    pending_id = rig.server.wait_for_bundle(session_id, timeout=AGENT_WAIT_S)
    rig.server.wait_for_state(pending_id, "active_detached", timeout=AGENT_WAIT_S)
    rig.server.wait_for_agent_text(session_id, "Tool error: ", timeout=AGENT_WAIT_S)
    assert rig.model.prompts_containing(RESUME_MARK) == []

    body = _respond_ok(rig.server, pending_id, answer("db", "sqlite"))
    assert body["resumed"] is True and body["successor_turn_id"]
    rig.server.wait_for_agent_text(session_id, "Resumed with: ", timeout=AGENT_WAIT_S)
    assert_resume_prompt_received_once(rig, agent)


def restart_kills_the_agent_and_resumes_a_new_one(rig: Rig, agent: Agent) -> None:
    session_id = rig.start_agent()
    pending_id = _live_question(rig, session_id)
    (agent_pid,) = _agent_pids(rig.server)
    tree = _group_members(agent_pid)
    assert agent_pid in tree, tree

    rig.server.kill()  # SIGKILL: the server cleans up nothing
    wait_until(
        lambda: not _group_members(agent_pid),
        timeout=20,
        what=f"agent process tree {tree} gone after the server was killed",
    )
    rig.server.start()
    rig.server.wait_for_state(pending_id, "active_detached")
    assert _respond_ok(rig.server, pending_id, answer("db", "sqlite"))["resumed"] is True
    rig.server.wait_for_agent_text(session_id, "Resumed with: ", timeout=AGENT_WAIT_S)
    assert len(_agent_pids(rig.server)) == 2  # started again by the second server
    assert_resume_prompt_received_once(rig, agent)


def failing(status: int) -> Script:
    def play(turn: Turn) -> Reply:
        return Reply(status=status, text=f"scripted failure {status}")

    return play


def model_failure_shows_as_the_agents_error(
    rig: Rig, reported: str, wait: float = AGENT_WAIT_S
) -> None:
    """The turn ends with the agent's error, which holds `reported` (the API's message, or
    the agent's own words for that status), and the person sees it in the transcript. `wait`:
    how long the agent may take to give up (its own retries)."""
    session_id = rig.start_agent()
    turn = wait_for_prompt_turn(rig, session_id, timeout=wait)
    assert turn["metadata"]["stop_reason"] == "error"
    assert reported in turn["metadata"]["error"], turn["metadata"]["error"]
    errors = wait_for_error_messages(rig, session_id)
    assert all(reported in m["content"] for m in errors), errors
    assert rig.model.main_requests(), "the agent never asked the model"


class WriteNote:
    """A model that writes `target` with the agent's own file tool (`write(target)` gives the
    tool's input), then reports the result as `Wrote: ...`."""

    def __init__(self, tool: str, write: Any) -> None:
        self.tool = tool
        self.write = write
        self.target = Path()

    def __call__(self, turn: Turn) -> Reply:
        if turn.tool_results:
            return Reply(text="Wrote: " + turn.tool_results[-1].text)
        return Reply(tool=self.tool, tool_input=self.write(self.target))


def file_write_waits_for_the_person(
    rig: Rig, model: WriteNote, kind: str, state: str, written: bool
) -> None:
    target = model.target = rig.workdir / "note.txt"
    session_id = rig.start_agent("Write a note.")

    row = _pending_permission(rig, session_id)
    assert not target.exists(), "the agent wrote before anyone allowed it"
    waiting = rig.server.ok("GET", f"/task-sessions/{session_id}")["session"]
    assert waiting["pending_action"] == "permission"

    response = rig.server.request(
        "POST", f"/permission/{row['id']}/respond", json={"option_id": _option(row, kind)}
    )
    assert response.status_code == 200, response.text
    assert response.json()["state"] == state

    wait_for_prompt_turn(rig, session_id)
    assert target.exists() is written
    if written:
        assert target.read_text().strip() == "hello from the agent"
    decided = rig.server.ok("GET", f"/permission/{row['id']}")
    assert decided["state"] == state and decided["decision"]["decided_by"] == "user"
