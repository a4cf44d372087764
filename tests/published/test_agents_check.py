"""`clarion agents check PROFILE` against each pinned published agent: the real command, in its
own process, on the profile the other tests here use (same command, same settings, pointed at
the worker's scripted model server). Every row must pass, the last one being that the agent
listed `ask_user_question` on the probe MCP endpoint the check served it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.published.conftest import (
    CLAUDE,
    CODEX,
    COPILOT,
    GEMINI,
    QWEN,
    Published,
    write_config,
)
from tests.published.conftest import _require as require_agent
from tests.published.scripted import Reply, ScriptedServer, Turn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(960)]

CHECKS = ("command", "acp handshake", "acp session", "ask_user_question")
# The check's own bounds: each ACP reply, and the prompt an agent that connects to its MCP
# servers only on a prompt gets. Generous: a pass never waits them, and two suites side by side
# on 2 cores (load 38) kept Gemini CLI and Copilot CLI from their first ACP reply for over 60 s
# (Copilot: "Package extraction took 36044ms").
BOUNDS = ("--timeout", "240", "--prompt-timeout", "240")
CLARION = (sys.executable, "-m", "clarion")


def _names_its_tools(turn: Turn) -> Reply:
    """The check asks the agent to name Clarion's tools; the model names the one it was offered
    (whatever the agent called it), or says it sees none."""
    offered = [name for name in turn.tool_names if "ask_user_question" in name]
    return Reply(text="\n".join(offered) or "I see no tools from the MCP server named clarion.")


@pytest.mark.parametrize("agent", [CLAUDE, GEMINI, CODEX, COPILOT, QWEN], ids=lambda a: a.profile)
def test_agents_check_passes_for_the_published_agent(
    agent: Published,
    tmp_path: Path,
    model_servers: Callable[[type[ScriptedServer]], ScriptedServer],
) -> None:
    require_agent(agent.entry)
    model = model_servers(agent.model).play(_names_its_tools)
    home, workdir = tmp_path / "home", tmp_path / "work"
    workdir.mkdir(parents=True)
    config = tmp_path / "clarion.toml"
    write_config(config, agent, workdir=workdir, env=agent.setup(home, model.url))
    done = subprocess.run(
        [*CLARION, "agents", "check", agent.profile, *BOUNDS, "--config", str(config)],
        env={
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "CLARION_HOME": str(tmp_path / "clarion"),
            "COLUMNS": "250",
            "NO_COLOR": "1",
            "TERM": "dumb",
        },
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for name in CHECKS:
        row = next((line for line in out.splitlines() if f"{agent.profile}: {name}" in line), "")
        assert " ok " in row and "FAIL" not in row, out
