"""Fixtures that run a published ACP agent under a real `clarion serve`, against a scripted model.

The agent is installed by `make agents` (npm ci in agents/published). When it is missing these
tests skip, or fail when CI or CLARION_REQUIRE_SERVICES is set, like the other services.

Each test gets its own model server on 127.0.0.1, its own HOME / CLAUDE_CONFIG_DIR and working
directory, and a `clarion.toml` whose `claude` profile points the agent at that model server with
every kind of outside traffic turned off.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import fresh_database_url, services_required
from tests.e2e.harness import ServerProcess
from tests.published.model_server import ModelServer, Script

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CLAUDE_ACP = REPO / "agents/published/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
CLAUDE_ACP_VERSION = "0.23.1"
ASK_TOOL = "mcp__clarion__ask_user_question"

# Claude Code's documented switches for outside traffic: with them the agent talks to nothing
# but ANTHROPIC_BASE_URL (the scripted model) and Clarion's MCP endpoint.
QUIET_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
}


def require_claude_agent() -> None:
    node = shutil.which("node")
    if node and CLAUDE_ACP.exists():
        return
    reason = (
        "node is not installed"
        if not node
        else f"{CLAUDE_ACP} is missing (run `make agents`: npm ci in agents/published)"
    )
    if services_required():
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass
class Rig:
    server: ServerProcess
    model: ModelServer
    workdir: Path  # the agent's working directory

    def start_claude(self, prompt: str = "Pick a database for the project.") -> str:
        return self.server.start_session(self.server.create_task(), prompt, agent="claude")


def claude_settings(config_dir: Path) -> None:
    """Claude Code's user settings: allow Clarion's question tool without asking. Clarion's own
    permission policy does the same once permission requests are carried to the person."""
    config_dir.mkdir(parents=True, exist_ok=True)
    settings = {"permissions": {"allow": [ASK_TOOL]}}
    (config_dir / "settings.json").write_text(json.dumps(settings))


def write_config(
    path: Path, *, model_url: str, home: Path, workdir: Path, env: dict[str, str]
) -> None:
    profile_env = {
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        # An API error is reported at once instead of after minutes of retries.
        "CLAUDE_CODE_MAX_RETRIES": "0",
        # Long enough that a live question is never given up by the agent; tests of the detached
        # path shorten it.
        "MCP_TOOL_TIMEOUT": "600000",
        **QUIET_ENV,
        **env,
    }
    lines = [
        "[agents.claude]",
        f"command = {json.dumps(['node', str(CLAUDE_ACP)])}",
        f"cwd = {json.dumps(str(workdir))}",
        "",
        "[agents.claude.env]",
        *(f"{k} = {json.dumps(v)}" for k, v in profile_env.items()),
        "",
    ]
    path.write_text("\n".join(lines))


@pytest.fixture
def claude_rig(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    """Factory: `claude_rig(script, db="sqlite", agent_env={...})` starts a model server playing
    `script` and a Clarion server whose `claude` profile runs the published agent against it."""
    require_claude_agent()
    with ExitStack() as stack:
        servers: list[ServerProcess] = []

        def make(
            script: Script, db: str = "sqlite", agent_env: dict[str, str] | None = None
        ) -> Rig:
            model = stack.enter_context(ModelServer(script))
            root = tmp_path / f"rig{len(servers)}"
            home, workdir = root / "home", root / "work"
            workdir.mkdir(parents=True)
            claude_settings(home / ".claude")
            config = root / "clarion.toml"
            write_config(
                config, model_url=model.url, home=home, workdir=workdir, env=agent_env or {}
            )
            url = stack.enter_context(fresh_database_url(db, tmp_path))
            serverdir = root / "server"
            serverdir.mkdir()
            server = ServerProcess(
                database_url=url,
                workdir=serverdir,
                env={"CLARION_CONFIG": str(config)},
            )
            servers.append(server)
            stack.callback(server.kill)
            server.start()
            return Rig(server=server, model=model, workdir=workdir)

        yield make
