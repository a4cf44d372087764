"""Fixtures that run a published ACP agent under a real `clarion serve`, against a scripted model.

The agent is installed by `make agents` (npm ci in agents/published). When it is missing these
tests skip, or fail when CI or CLARION_REQUIRE_SERVICES is set, like the other services.

Each worker runs one scripted model server per API on 127.0.0.1 (scripted.py: the Anthropic
Messages API for Claude Code, the Gemini API for Gemini CLI, OpenAI's Responses API for Codex,
Chat Completions for GitHub Copilot CLI and Qwen Code); each test plays its own script on it at
a base URL of its own. Each test gets its own HOME (with the agent's settings) and working
directory, and a `clarion.toml` whose profile (`claude`, `gemini`, `codex`, `copilot`, `qwen`)
points the agent at that model server with every kind of outside traffic turned off.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.conftest import fresh_database_url, services_required
from tests.e2e.harness import ServerProcess
from tests.published.gemini_server import GeminiServer
from tests.published.model_server import ModelServer, Script, ToolResult
from tests.published.openai_server import MODEL, ChatCompletionsServer, ResponsesServer
from tests.published.scripted import ScriptedServer

REPO = Path(__file__).resolve().parents[2]
CLAUDE_ACP = REPO / "agents/published/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
CLAUDE_ACP_VERSION = "0.23.1"
ASK_TOOL = "mcp__clarion__ask_user_question"
GEMINI_CLI = REPO / "agents/published/node_modules/@google/gemini-cli/bundle/gemini.js"
GEMINI_CLI_VERSION = "0.61.0"
# Gemini CLI offers an MCP tool to the model as mcp_<server>_<tool>.
GEMINI_ASK_TOOL = "mcp_clarion_ask_user_question"

CODEX_ACP = REPO / "agents/published/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
CODEX_ACP_VERSION = "0.16.0"
CODEX_MODEL = "gpt-5.4"
COPILOT_CLI = REPO / "agents/published/node_modules/@github/copilot/npm-loader.js"
COPILOT_CLI_VERSION = "1.0.102"
QWEN_CLI = REPO / "agents/published/node_modules/@qwen-code/qwen-code/cli-entry.js"
QWEN_CLI_VERSION = "0.24.4"
# Qwen Code names an MCP tool as Claude Code does; its own built-in question tool is the plain
# `ask_user_question`.
QWEN_ASK_TOOL = "mcp__clarion__ask_user_question"

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


def _require(entry: Path) -> None:
    node = shutil.which("node")
    if node and entry.exists():
        return
    reason = (
        "node is not installed"
        if not node
        else f"{entry} is missing (run `make agents`: npm ci in agents/published)"
    )
    if services_required():
        pytest.fail(reason)
    pytest.skip(reason)


class Model(Protocol):
    """What the tests read from a scripted model server (scripted.ScriptedServer)."""

    @property
    def url(self) -> str: ...
    def main_requests(self) -> list[dict[str, Any]]: ...
    def tool_results(self) -> list[ToolResult]: ...
    def prompts_containing(self, needle: str) -> list[str]: ...
    def user_messages_containing(self, needle: str) -> int: ...
    def offered_tools(self) -> set[str]: ...


@dataclass
class Rig:
    server: ServerProcess
    model: Model
    workdir: Path  # the agent's working directory
    agent: str  # the profile name

    def start_agent(self, prompt: str = "Pick a database for the project.") -> str:
        session_id = self.server.start_session(self.server.create_task(), prompt, agent=self.agent)
        # Every published agent runs in the sandbox (the profile requires it).
        session = self.server.ok("GET", f"/task-sessions/{session_id}")["session"]
        assert session["sandbox"] == "bwrap"
        return session_id

    start_claude = start_agent


def claude_setup(home: Path, model_url: str) -> dict[str, str]:
    """Claude Code's user settings allow Clarion's question tool without asking (saving the
    permission round trip Clarion would otherwise answer by policy; one test removes it); the
    environment points it at the model server with all other traffic off."""
    config_dir = home / ".claude"
    config_dir.mkdir(parents=True, exist_ok=True)
    settings = {"permissions": {"allow": [ASK_TOOL]}}
    (config_dir / "settings.json").write_text(json.dumps(settings))
    return {
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        # An API error is reported at once instead of after minutes of retries.
        "CLAUDE_CODE_MAX_RETRIES": "0",
        # Long enough that a live question is never given up by the agent; tests of the detached
        # path shorten it.
        "MCP_TOOL_TIMEOUT": "600000",
        **QUIET_ENV,
    }


def gemini_setup(home: Path, model_url: str) -> dict[str, str]:
    """Gemini CLI's user settings: no usage statistics, no update checks, API-key auth,
    Clarion's question tool allowed without a confirmation, and one attempt per model request
    (by default it retries a 5xx up to 10 times, with backoff from 5 s)."""
    settings_dir = home / ".gemini"
    settings_dir.mkdir(parents=True, exist_ok=True)
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "maxAttempts": 1},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "tools": {"allowed": [GEMINI_ASK_TOOL]},
    }
    (settings_dir / "settings.json").write_text(json.dumps(settings))
    return {
        "GOOGLE_GEMINI_BASE_URL": model_url,
        "GEMINI_API_KEY": "test-not-a-key",
        "HOME": str(home),
        # Without it Gemini CLI ignores the MCP servers of a folder it does not trust.
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_TELEMETRY_ENABLED": "false",
    }


def codex_setup(home: Path, model_url: str) -> dict[str, str]:
    """Codex's config.toml: a model provider at the scripted Responses API, no retries (an API
    error shows at once), no update checks; file writes sandboxed read-only so that they need
    an approval, which codex-acp asks over ACP."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        "\n".join(
            [
                # A model Codex knows, so that it offers its usual tools (apply_patch among them).
                f'model = "{CODEX_MODEL}"',
                'model_provider = "scripted"',
                'approval_policy = "on-request"',
                'sandbox_mode = "read-only"',
                "check_for_update_on_startup = false",
                "",
                "[model_providers.scripted]",
                'name = "Scripted"',
                f'base_url = "{model_url}/v1"',
                'wire_api = "responses"',
                'env_key = "SCRIPTED_API_KEY"',
                "request_max_retries = 0",
                "stream_max_retries = 0",
                "",
                "[analytics]",
                "enabled = false",
                "",
            ]
        )
    )
    return {"HOME": str(home), "CODEX_HOME": str(codex_home), "SCRIPTED_API_KEY": "test-not-a-key"}


def copilot_setup(home: Path, model_url: str) -> dict[str, str]:
    """GitHub Copilot CLI with its own model provider (BYOK) at the scripted Chat Completions
    API, offline: no GitHub sign-in, telemetry, update or GitHub MCP server traffic."""
    return {
        "HOME": str(home),
        "COPILOT_HOME": str(home / ".copilot"),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{model_url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "test-not-a-key",
        "COPILOT_MODEL": MODEL,
        "COPILOT_AUTO_UPDATE": "false",
    }


def qwen_setup(home: Path, model_url: str) -> dict[str, str]:
    """Qwen Code with the OpenAI-compatible provider at the scripted Chat Completions API; no
    usage statistics, no update checks, one attempt per model request. Clarion's question tool
    is declared to the model up front (Qwen otherwise hides every MCP tool behind its
    tool_search/tool_call bridge) and Qwen's own `ask_user_question` is not registered; tools
    ask before they act (the default `auto` mode has the model judge each call instead)."""
    settings_dir = home / ".qwen"
    settings_dir.mkdir(parents=True, exist_ok=True)
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"generationConfig": {"maxRetries": 0}},
        # Qwen's permission request for an MCP tool is titled with the call's arguments, not
        # the tool's name, so Clarion cannot tell its own tool apart: the settings allow it.
        "permissions": {"allow": [QWEN_ASK_TOOL]},
        "tools": {
            "approvalMode": "default",
            "visible": [QWEN_ASK_TOOL],
            "disabled": ["ask_user_question"],
        },
    }
    (settings_dir / "settings.json").write_text(json.dumps(settings))
    return {
        "HOME": str(home),
        "OPENAI_BASE_URL": f"{model_url}/v1",
        "OPENAI_API_KEY": "test-not-a-key",
        "OPENAI_MODEL": MODEL,
        # Discover MCP servers (Clarion's) while the session opens, instead of beside the first
        # prompt: the model's first request then offers Clarion's tool, not a moment later.
        "QWEN_CODE_LEGACY_MCP_BLOCKING": "1",
    }


@dataclass(frozen=True)
class Published:
    profile: str
    entry: Path  # what must be installed
    command: tuple[str, ...]
    setup: Callable[[Path, str], dict[str, str]]
    model: type[ScriptedServer]


CLAUDE = Published("claude", CLAUDE_ACP, ("node", str(CLAUDE_ACP)), claude_setup, ModelServer)
GEMINI = Published(
    "gemini", GEMINI_CLI, ("node", str(GEMINI_CLI), "--acp"), gemini_setup, GeminiServer
)
CODEX = Published("codex", CODEX_ACP, (str(CODEX_ACP),), codex_setup, ResponsesServer)
COPILOT = Published(
    "copilot",
    COPILOT_CLI,
    ("node", str(COPILOT_CLI), "--acp"),
    copilot_setup,
    ChatCompletionsServer,
)
# Qwen Code discovers Clarion's MCP tool within a fixed 5 s that nothing lengthens
# (docs/agents.md). On two cores saturated by the rest of the suite its own start could outlast
# that, and then the model has no tool to ask with: where the tests may (as root, as in CI), its
# process runs ahead of the rest of the suite's, so the limit measures Qwen, not the suite's load.
_AHEAD = ("nice", "-n", "-10") if os.geteuid() == 0 else ()
QWEN = Published(
    "qwen",
    QWEN_CLI,
    (*_AHEAD, "node", str(QWEN_CLI), "--acp"),
    qwen_setup,
    ChatCompletionsServer,
)


def write_config(path: Path, agent: Published, *, workdir: Path, env: dict[str, str]) -> None:
    lines = [
        f"[agents.{agent.profile}]",
        f"command = {json.dumps(list(agent.command))}",
        f"cwd = {json.dumps(str(workdir))}",
        # As docs/agents.md's profiles: bubblewrap required; the HOME in `env` (the agent's
        # settings) is its home in the sandbox.
        'sandbox = "bwrap"',
        "",
        f"[agents.{agent.profile}.env]",
        *(f"{k} = {json.dumps(v)}" for k, v in env.items()),
        "",
    ]
    path.write_text("\n".join(lines))


@pytest.fixture(scope="session")
def model_servers() -> Iterator[Callable[[type[ScriptedServer]], ScriptedServer]]:
    """One scripted model server per API for the whole worker, started when first asked for."""
    with ExitStack() as stack:
        servers: dict[type[ScriptedServer], ScriptedServer] = {}

        def get(kind: type[ScriptedServer]) -> ScriptedServer:
            if kind not in servers:
                servers[kind] = stack.enter_context(kind(_nothing_scripted))
            return servers[kind]

        yield get


def _nothing_scripted(turn: Any) -> Any:
    raise AssertionError("no test is playing a script on this model server")


def _dump(model: ScriptedServer, path: Path) -> None:
    path.write_text(json.dumps(model.record(), indent=1))


def _rig_factory(
    tmp_path: Path,
    agent: Published,
    model_servers: Callable[[type[ScriptedServer]], ScriptedServer],
) -> Iterator[Callable[..., Rig]]:
    _require(agent.entry)
    with ExitStack() as stack:
        count = 0

        def make(
            script: Script,
            db: str = "sqlite",
            agent_env: dict[str, str] | None = None,
            server_env: dict[str, str] | None = None,
        ) -> Rig:
            nonlocal count
            count += 1
            model = model_servers(agent.model).play(script)
            root = tmp_path / f"rig{count}"
            # What the agent sent the model, kept beside the server's log for a failure's reader.
            stack.callback(_dump, model, root / "model-requests.json")
            home, workdir, serverdir = root / "home", root / "work", root / "server"
            workdir.mkdir(parents=True)
            serverdir.mkdir()
            env = {**agent.setup(home, model.url), **(agent_env or {})}
            config = root / "clarion.toml"
            write_config(config, agent, workdir=workdir, env=env)
            url = stack.enter_context(fresh_database_url(db, tmp_path, migrated_ok=True))
            server = ServerProcess(
                database_url=url,
                workdir=serverdir,
                # A published agent is a Node program that may take seconds to end a turn on a
                # loaded machine; no test here waits for a resume to go unaccepted, so the
                # harness's 5 s is no bound they need (a detached answer's resume waits for the
                # agent's earlier turn to end).
                env={
                    "CLARION_CONFIG": str(config),
                    "CLARION_RESUME_ACCEPT_S": "60",
                    **(server_env or {}),
                },
            )
            stack.callback(server.kill)
            server.start()
            return Rig(server=server, model=model, workdir=workdir, agent=agent.profile)

        yield make


Servers = Callable[[type[ScriptedServer]], ScriptedServer]


@pytest.fixture
def claude_rig(tmp_path: Path, model_servers: Servers) -> Iterator[Callable[..., Rig]]:
    """Factory: `claude_rig(script, db="sqlite", agent_env={...})` has the worker's model server
    play `script` and starts a Clarion server whose `claude` profile runs the published agent
    against it."""
    yield from _rig_factory(tmp_path, CLAUDE, model_servers)


@pytest.fixture
def gemini_rig(tmp_path: Path, model_servers: Servers) -> Iterator[Callable[..., Rig]]:
    """The same for Gemini CLI (`gemini --acp`) against a scripted Gemini API."""
    yield from _rig_factory(tmp_path, GEMINI, model_servers)


@pytest.fixture
def codex_rig(tmp_path: Path, model_servers: Servers) -> Iterator[Callable[..., Rig]]:
    """The same for Codex (codex-acp) against a scripted OpenAI Responses API."""
    yield from _rig_factory(tmp_path, CODEX, model_servers)


@pytest.fixture
def copilot_rig(tmp_path: Path, model_servers: Servers) -> Iterator[Callable[..., Rig]]:
    """The same for GitHub Copilot CLI (`copilot --acp`) against a scripted Chat Completions
    API, its own-provider (BYOK) mode."""
    yield from _rig_factory(tmp_path, COPILOT, model_servers)


@pytest.fixture
def qwen_rig(tmp_path: Path, model_servers: Servers) -> Iterator[Callable[..., Rig]]:
    """The same for Qwen Code (`qwen --acp`) against a scripted Chat Completions API."""
    yield from _rig_factory(tmp_path, QWEN, model_servers)
