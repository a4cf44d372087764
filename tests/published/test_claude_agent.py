"""The published Claude Code ACP adapter, end to end under a real `clarion serve`.

The agent runs its real loop against the scripted model on 127.0.0.1 (model_server.py); each
test's script decides which tool the "model" calls, and the model server's record shows what the
agent sent back: the tool result carrying the person's answer, the resume prompt.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clarion.domain.prompts import RECAP_FOOTER, RECAP_HEADER
from tests.e2e.harness import SKIP, ServerProcess, answer, wait_until
from tests.published.conftest import ASK_TOOL, Rig
from tests.published.model_server import RESUME_MARK, Reply, Turn, ask_then_quote

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

DBS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]
# The agent is a node process starting a Claude Code CLI; a passing run waits a few seconds.
AGENT_WAIT_S = 60

DB_QUESTION = {
    "id": "db",
    "prompt": "Which database should the service use?",
    "options": [
        {"label": "PostgreSQL", "option_id": "postgres"},
        {"label": "SQLite", "option_id": "sqlite"},
    ],
}
ASK_DB = {"questions": [DB_QUESTION]}
ASK_THREE = {
    "context": "The service stores orders.",
    "questions": [
        DB_QUESTION,
        {
            "id": "language",
            "prompt": "Which language?",
            "options": [
                {"label": "Python", "option_id": "python"},
                {"label": "Go", "option_id": "go"},
                {"label": "Rust", "option_id": "rust"},
            ],
        },
        {
            "id": "deploy",
            "prompt": "How is it deployed?",
            "options": [
                {"label": "Docker", "option_id": "docker"},
                {"label": "Bare metal", "option_id": "bare-metal"},
            ],
        },
    ],
}


def _ask_results(rig: Rig) -> list[Any]:
    """The answers to Clarion's question tool the model received, parsed, in order."""
    results = [r for r in rig.model.tool_results() if r.name == ASK_TOOL]
    assert all(not r.is_error for r in results), results
    return [json.loads(r.text) for r in results]


def _live_question(rig: Rig, session_id: str) -> str:
    pending_id = rig.server.wait_for_bundle(session_id, timeout=AGENT_WAIT_S)
    rig.server.wait_for_state(pending_id, "active_live")
    return pending_id


def _respond_ok(server: ServerProcess, pending_id: str, body: dict[str, Any]) -> dict[str, Any]:
    response = server.respond(pending_id, body)
    assert response.status_code == 200, response.text
    return dict(response.json())


# ---------------------------------------------------------------------------------- live


@pytest.mark.parametrize("db", DBS)
def test_live_answer_reaches_the_model_once_as_the_contract_json(
    claude_rig: Callable[..., Rig], db: str
) -> None:
    rig = claude_rig(ask_then_quote(ASK_TOOL, ASK_DB), db=db)
    session_id = rig.start_claude()
    pending_id = _live_question(rig, session_id)
    assert rig.server.bundle(pending_id)["questions"][0]["prompt"] == DB_QUESTION["prompt"]

    body = _respond_ok(rig.server, pending_id, answer("db", "postgres"))
    assert body["status"] == "answered" and body["resumed"] is False

    expected = {"db": {"selected_options": ["postgres"], "custom_text": ""}}
    text = rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    # Once, readable: not wrapped in {"result": "..."} by a declared output schema.
    assert json.loads(text.removeprefix("Got: ")) == expected
    assert _ask_results(rig) == [expected]
    assert rig.server.bundle(pending_id)["state"] == "terminal"


def test_multi_question_answers_reach_the_model(claude_rig: Callable[..., Rig]) -> None:
    rig = claude_rig(ask_then_quote(ASK_TOOL, ASK_THREE))
    session_id = rig.start_claude()
    pending_id = _live_question(rig, session_id)
    bundle = rig.server.bundle(pending_id)
    assert [q["id"] for q in bundle["questions"]] == ["db", "language", "deploy"]
    assert bundle["context"] == "The service stores orders."

    _respond_ok(
        rig.server,
        pending_id,
        {
            "answers": [
                {"question_id": "db", "selected_options": ["sqlite"], "custom_text": ""},
                {"question_id": "language", "selected_options": ["go"], "custom_text": ""},
                {"question_id": "deploy", "selected_options": [], "custom_text": "Kubernetes"},
            ],
            "rejected": False,
            "reject_reason": "",
        },
    )
    rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    assert _ask_results(rig) == [
        {
            "db": {"selected_options": ["sqlite"], "custom_text": ""},
            "language": {"selected_options": ["go"], "custom_text": ""},
            "deploy": {"selected_options": [], "custom_text": "Kubernetes"},
        }
    ]


def test_skip_reaches_the_model_as_a_rejection(claude_rig: Callable[..., Rig]) -> None:
    rig = claude_rig(ask_then_quote(ASK_TOOL, ASK_DB))
    session_id = rig.start_claude()
    pending_id = _live_question(rig, session_id)

    body = _respond_ok(rig.server, pending_id, SKIP)
    assert body["status"] == "rejected"
    rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    assert _ask_results(rig) == [{"rejected": True, "reject_reason": "User skipped"}]


# ------------------------------------------------------------------------------ detached


@pytest.mark.parametrize("db", DBS)
def test_detached_answer_resumes_the_agent_with_the_resume_prompt_once(
    claude_rig: Callable[..., Rig], db: str
) -> None:
    # The agent's own MCP client gives up after 2 s (Claude Code's MCP_TOOL_TIMEOUT, in ms):
    # the call is dropped, the question stays open, the model is told so and ends its turn.
    rig = claude_rig(
        ask_then_quote(ASK_TOOL, ASK_DB), db=db, agent_env={"MCP_TOOL_TIMEOUT": "2000"}
    )
    session_id = rig.start_claude()
    pending_id = rig.server.wait_for_bundle(session_id, timeout=AGENT_WAIT_S)
    rig.server.wait_for_state(pending_id, "active_detached", timeout=AGENT_WAIT_S)
    rig.server.wait_for_agent_text(session_id, "Tool error: ", timeout=AGENT_WAIT_S)
    assert rig.model.prompts_containing(RESUME_MARK) == []

    body = _respond_ok(rig.server, pending_id, answer("db", "sqlite", "with WAL"))
    assert body["resumed"] is True and body["successor_turn_id"]

    rig.server.wait_for_agent_text(session_id, "Resumed with: ", timeout=AGENT_WAIT_S)
    _assert_resume_prompt_received_once(rig)


def resume_prompt_of(prompt: str) -> str:
    """The resume prompt in what the model received: after a restart whose agent could not load
    its session (a kill may come before the agent saved it), Clarion puts a recap of the
    transcript in front of it."""
    if prompt.startswith(RECAP_HEADER):
        _recap, sep, rest = prompt.partition(f"{RECAP_FOOTER}\n\n")
        assert sep, f"a recap without its end: {prompt!r}"
        return rest
    return prompt


def _assert_resume_prompt_received_once(rig: Rig) -> None:
    (received,) = rig.model.prompts_containing(RESUME_MARK)
    prompt = resume_prompt_of(received)
    assert prompt.startswith(RESUME_MARK)
    assert str(DB_QUESTION["prompt"]) in prompt and "SQLite" in prompt
    assert prompt.rstrip().endswith("Please continue with this information.")
    assert rig.model.user_messages_containing(RESUME_MARK) == 1


# ------------------------------------------------------------------------------- restart


def _agent_pids(server: ServerProcess) -> list[int]:
    return [int(p) for p in re.findall(r"agent started \(pid (\d+)", server.logs())]


def _group_members(pgid: int) -> list[int]:
    """The live members of the agent's process group and everything under them: in its
    sandbox the agent runs in a session (and group) of its own under bubblewrap."""
    stats = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[0] != "Z":
            stats[int(entry)] = (int(fields[1]), int(fields[2]))  # parent, group
    members = {pid for pid, (_, group) in stats.items() if group == pgid}
    grew = True
    while grew:
        below = {pid for pid, (parent, _) in stats.items() if parent in members}
        grew = not below <= members
        members |= below
    return sorted(members)


@pytest.mark.parametrize("db", DBS)
def test_restart_with_a_question_open_kills_the_agent_and_resumes_a_new_one(
    claude_rig: Callable[..., Rig], db: str
) -> None:
    rig = claude_rig(ask_then_quote(ASK_TOOL, ASK_DB), db=db)
    session_id = rig.start_claude()
    pending_id = _live_question(rig, session_id)
    (agent_pid,) = _agent_pids(rig.server)
    tree = _group_members(agent_pid)
    # bubblewrap (the agent's process for the server), its init in the sandbox's pid
    # namespace, node (the adapter), the Claude Code CLI it runs, and Clarion's guard
    assert agent_pid in tree and len(tree) >= 5, tree

    rig.server.kill()  # SIGKILL: the server cleans up nothing
    wait_until(
        lambda: not _group_members(agent_pid),
        timeout=20,
        what=f"agent process tree {tree} gone after the server was killed",
    )

    rig.server.start()
    rig.server.wait_for_state(pending_id, "active_detached")
    body = _respond_ok(rig.server, pending_id, answer("db", "sqlite"))
    assert body["resumed"] is True

    rig.server.wait_for_agent_text(session_id, "Resumed with: ", timeout=AGENT_WAIT_S)
    assert len(_agent_pids(rig.server)) == 2  # started again by the second server
    _assert_resume_prompt_received_once(rig)


# ------------------------------------------------------------------------------- failure


def wait_for_prompt_turn(
    rig: Rig, session_id: str, timeout: float = AGENT_WAIT_S
) -> dict[str, Any]:
    """The first prompt's turn (not a lifecycle turn), once it has completed."""

    def completed() -> dict[str, Any] | None:
        return next(
            (
                t
                for t in rig.server.turns(session_id)
                if not t["metadata"].get("lifecycle_only") and t["completed_at"]
            ),
            None,
        )

    return dict(wait_until(completed, timeout=timeout, what="the prompt's turn completed"))


def wait_for_error_messages(rig: Rig, session_id: str) -> list[dict[str, Any]]:
    """The transcript's `error` messages, once there is one."""
    return list(
        wait_until(
            lambda: [m for m in rig.server.messages(session_id) if m["type"] == "error"],
            timeout=AGENT_WAIT_S,
            what="an error message in the transcript",
        )
    )


@pytest.mark.parametrize("status", [401, 500])
def test_model_api_failure_ends_the_turn_with_the_agents_error(
    claude_rig: Callable[..., Rig], status: int
) -> None:
    def failing(turn: Turn) -> Reply:
        return Reply(status=status, text=f"scripted failure {status}")

    rig = claude_rig(failing)
    session_id = rig.start_claude()

    turn = wait_for_prompt_turn(rig, session_id)
    # What the agent reported (Claude Code's "API Error: <status> <body>") is on the turn.
    assert turn["metadata"]["stop_reason"] == "error"
    assert f"API Error: {status}" in turn["metadata"]["error"]
    assert f"scripted failure {status}" in turn["metadata"]["error"]
    # The person sees it too: an `error` message in the transcript carrying the same reason.
    errors = wait_for_error_messages(rig, session_id)
    assert all(f"scripted failure {status}" in m["content"] for m in errors), errors
    assert rig.model.main_requests(), "the agent never asked the model"


# ------------------------------------------------------------ Claude Code's own question tool


def _native_then_clarion(turn: Turn) -> Reply:
    """A model that reaches for Claude Code's own AskUserQuestion first, and falls back to
    Clarion's tool when the agent refuses it."""
    if turn.tool_results:
        result = turn.tool_results[-1]
        if result.name == "AskUserQuestion":
            return Reply(tool=ASK_TOOL, tool_input=ASK_DB)
        return Reply(text="Got: " + result.text)
    native = {
        "questions": [
            {
                "question": DB_QUESTION["prompt"],
                "header": "Database",
                "multiSelect": False,
                "options": [
                    {"label": "PostgreSQL", "description": "a server"},
                    {"label": "SQLite", "description": "a file"},
                ],
            }
        ]
    }
    return Reply(tool="AskUserQuestion", tool_input=native)


def test_native_ask_user_question_is_refused_and_the_question_reaches_clarion(
    claude_rig: Callable[..., Rig],
) -> None:
    rig = claude_rig(_native_then_clarion)
    session_id = rig.start_claude()
    pending_id = _live_question(rig, session_id)
    _respond_ok(rig.server, pending_id, answer("db", "postgres"))
    rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)

    offered = rig.model.offered_tools()
    assert ASK_TOOL in offered and "AskUserQuestion" not in offered
    native = [r for r in rig.model.tool_results() if r.name == "AskUserQuestion"]
    assert len(native) == 1 and native[0].is_error
    assert _ask_results(rig) == [{"db": {"selected_options": ["postgres"], "custom_text": ""}}]


# ---------------------------------------------------------------------------- permission


class WriteNote:
    """A model that writes `target` with the agent's own file tool, then reports the result.
    `target` is set once the rig exists: it lies in the agent's working directory."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.target = Path()

    def __call__(self, turn: Turn) -> Reply:
        if turn.tool_results:
            result = turn.tool_results[-1]
            return Reply(text=("Write failed: " if result.is_error else "Wrote: ") + result.text)
        content = {"file_path": str(self.target), "content": "hello from the agent"}
        return Reply(tool=self.tool, tool_input=content)


def _pending_permission(rig: Rig, session_id: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        return next(
            (
                m
                for m in rig.server.messages(session_id)
                if m["type"] == "permission_request" and m["metadata"]["status"] == "pending"
            ),
            None,
        )

    return dict(wait_until(found, timeout=AGENT_WAIT_S, what="the agent's permission request"))


def _option(row: dict[str, Any], kind: str) -> str:
    return next(str(o["option_id"]) for o in row["metadata"]["options"] if o["kind"] == kind)


@pytest.mark.parametrize(
    ("kind", "state", "written"),
    [("allow_once", "approved", True), ("reject_once", "rejected", False)],
)
def test_a_file_write_waits_for_the_persons_permission(
    claude_rig: Callable[..., Rig], kind: str, state: str, written: bool
) -> None:
    model = WriteNote("Write")
    rig = claude_rig(model)
    target = model.target = rig.workdir / "note.txt"
    session_id = rig.start_claude("Write a note.")

    row = _pending_permission(rig, session_id)
    assert row["metadata"]["tool_call"]["kind"] == "edit"
    assert "Write" in row["content"] or str(target.name) in row["content"]
    assert not target.exists(), "the agent wrote before anyone allowed it"
    waiting = rig.server.ok("GET", f"/task-sessions/{session_id}")["session"]
    assert waiting["pending_action"] == "permission"

    response = rig.server.request(
        "POST", f"/permission/{row['id']}/respond", json={"option_id": _option(row, kind)}
    )
    assert response.status_code == 200, response.text
    assert response.json()["state"] == state

    prefix = "Wrote: " if written else "Write failed: "
    rig.server.wait_for_agent_text(session_id, prefix, timeout=AGENT_WAIT_S)
    assert target.exists() is written
    if written:
        assert target.read_text() == "hello from the agent"
    decided = rig.server.ok("GET", f"/permission/{row['id']}")
    assert decided["state"] == state and decided["decision"]["decided_by"] == "user"


def test_the_question_tool_needs_no_allow_rule_in_the_agents_settings(
    claude_rig: Callable[..., Rig],
) -> None:
    rig = claude_rig(ask_then_quote(ASK_TOOL, ASK_DB))
    # Claude Code asks permission before Clarion's tool too; Clarion always allows its own tool.
    (rig.workdir.parent / "home" / ".claude" / "settings.json").write_text("{}")
    session_id = rig.start_claude()
    pending_id = _live_question(rig, session_id)
    _respond_ok(rig.server, pending_id, answer("db", "sqlite"))

    rig.server.wait_for_agent_text(session_id, "Got: ", timeout=AGENT_WAIT_S)
    assert _ask_results(rig) == [{"db": {"selected_options": ["sqlite"], "custom_text": ""}}]
    # The agent did ask (its settings no longer allow the tool); Clarion recorded the request
    # as decided by policy and never showed it to the person.
    [request] = [m for m in rig.server.messages(session_id) if m["type"] == "permission_request"]
    assert ASK_TOOL in request["content"] or "ask_user_question" in request["content"]
    assert request["metadata"]["status"] == "approved"
    assert request["metadata"]["decided_by"] == "policy"
