"""`clarion agents check`'s agent side: start one profile's agent the way the runtime does (same
environment, spawn and ACP client), take it through the handshake, a session that offers an MCP
endpoint, and if need be one prompt, then stop it. Each step's outcome is a `Step`; what the
agent did to the MCP endpoint is observed by the caller, which serves it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from clarion.agents.client import deny_all
from clarion.agents.process import build_env, spawn
from clarion.agents.running_agent import RunningAgent
from clarion.agents.sandbox import SandboxUnavailable, effective_mode
from clarion.config import AgentProfile
from clarion.ports import AgentExited, AgentOutput, PermissionAsk, PromptFinished

CHECK_SESSION = "agentscheck"
ASK_TOOL = "ask_user_question"
STOP_GRACE_S = 2.0
# A real agent asked to name its tools; the built-in agent (scripted) asks a question instead,
# which makes its MCP client list the tools first.
TOOLS_PROMPT = (
    "This is a setup check by Clarion. Do not call any tool. Reply with the names of the tools "
    "the MCP server named 'clarion' gives you, one per line."
)
BUILTIN_PROMPT = "/scenario ask"


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    ok: bool
    detail: str


class _Watch:
    """The sink and permission policy of the checked agent: it only notes what happens."""

    def __init__(self) -> None:
        self.finished = asyncio.Event()
        self.tool_refused = False

    async def on_output(self, output: AgentOutput) -> None:
        return None

    async def on_prompt_finished(self, finished: PromptFinished) -> None:
        self.finished.set()

    async def on_agent_exited(self, exited: AgentExited) -> None:
        self.finished.set()

    async def on_permission(self, ask: PermissionAsk) -> str | None:
        return None

    async def permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        # An agent that must ask before calling Clarion's tool would stop every question on a
        # permission prompt: the tool is not allowed in its settings.
        if ASK_TOOL in (tool_call.title or "") or ASK_TOOL in str(tool_call.raw_input or ""):
            self.tool_refused = True
        return await deny_all(session_id, tool_call, options)


def prompt_for(profile: AgentProfile) -> str:
    return BUILTIN_PROMPT if "clarion.agents.builtin" in profile.command else TOOLS_PROMPT


async def check_agent(
    profile: AgentProfile,
    mcp_url: str,
    mcp_seen: Callable[[float], Awaitable[str | None]],
    *,
    reply_bound: float,
    prompt_bound: float,
) -> list[Step]:
    """The steps in order, stopping at the first that fails. `mcp_seen(within)` waits up to
    `within` seconds for the agent to list the endpoint's tools: None when it did, else why not."""
    program = profile.command[0]
    env = build_env(profile.env, None)
    if shutil.which(program, path=env.get("PATH")) is None:
        return [Step("command", False, f"command not found: {program}")]
    try:
        mode = effective_mode(profile.sandbox)
    except SandboxUnavailable as exc:
        return [Step("sandbox", False, f'sandbox = "bwrap" but bubblewrap cannot run it: {exc}')]
    sandbox = Step("sandbox", True, mode)
    cwd = _absolute(profile.cwd)
    try:
        proc = await spawn(profile.command, env, cwd, profile.sandbox)
    except OSError as exc:
        return [sandbox, Step("command", False, f"cannot start it: {exc}")]
    watch = _Watch()
    agent = RunningAgent(session_id=CHECK_SESSION, profile=profile.name, proc=proc, sink=watch)
    agent.attach(watch.permission)
    steps = [sandbox, Step("command", True, f"ok (started, pid {proc.pid})")]
    try:
        steps.extend(
            await _converse(agent, watch, profile, mcp_url, mcp_seen, reply_bound, prompt_bound)
        )
    finally:
        await agent.close(STOP_GRACE_S)
    return steps


async def _converse(
    agent: RunningAgent,
    watch: _Watch,
    profile: AgentProfile,
    mcp_url: str,
    mcp_seen: Callable[[float], Awaitable[str | None]],
    reply_bound: float,
    prompt_bound: float,
) -> list[Step]:
    try:
        async with asyncio.timeout(reply_bound):
            await agent.handshake()
    except TimeoutError:
        return [Step("acp handshake", False, f"no ACP reply in {reply_bound:g} s" + _why(agent))]
    except Exception as exc:
        return [Step("acp handshake", False, f"initialize failed: {exc!r}" + _why(agent))]
    steps = [Step("acp handshake", True, "ok")]
    try:
        async with asyncio.timeout(reply_bound):
            await agent.open_session(
                mcp_url=mcp_url, mcp_token="agents-check", cwd=_absolute(profile.cwd)
            )
    except TimeoutError:
        return [*steps, Step("acp session", False, f"no session/new reply in {reply_bound:g} s")]
    except Exception as exc:
        return [*steps, Step("acp session", False, f"session/new failed: {exc!r}" + _why(agent))]
    steps.append(Step("acp session", True, f"ok ({agent.acp_session_id})"))
    # Most agents connect to their MCP servers as the session opens; the others on a prompt.
    missing = await mcp_seen(min(reply_bound, 2.0))
    if missing is not None:
        with contextlib.suppress(Exception):
            await agent.prompt(prompt_for(profile), 1, reply_bound)
        missing = await _until_listed_or_done(watch, mcp_seen, prompt_bound)
    if watch.tool_refused:
        return [
            *steps,
            Step(
                ASK_TOOL, False, f"tool not allowed: the agent asked permission to call {ASK_TOOL}"
            ),
        ]
    if missing is not None:
        return [*steps, Step(ASK_TOOL, False, missing)]
    return [*steps, Step(ASK_TOOL, True, "ok (the agent listed the tools of Clarion's MCP server)")]


async def _until_listed_or_done(
    watch: _Watch, mcp_seen: Callable[[float], Awaitable[str | None]], bound: float
) -> str | None:
    """Wait for the tools to be listed, the prompt to end or `bound`, whichever comes first."""
    listed = asyncio.ensure_future(mcp_seen(bound))
    ended = asyncio.ensure_future(watch.finished.wait())
    await asyncio.wait({listed, ended}, return_when=asyncio.FIRST_COMPLETED)
    ended.cancel()
    await asyncio.gather(ended, return_exceptions=True)
    if listed.done():
        return listed.result()
    listed.cancel()
    await asyncio.gather(listed, return_exceptions=True)
    # A last look: the listing may be in flight as the turn ends.
    return await mcp_seen(0.5)


def _why(agent: RunningAgent) -> str:
    code = agent.proc.returncode
    tail = agent.stderr_text().replace("\n", " | ")
    return (f"; exited with code {code}" if code is not None else "") + (
        f"; stderr: {tail}" if tail else ""
    )


def _absolute(path: str | None) -> str:
    # As the runtime does: ACP's session/new needs an absolute cwd.
    return os.path.abspath(path or os.getcwd())
