"""The built-in agent's scenario table: what each `/scenario NAME key=value` prompt does.

Imported only by `clarion.agents.builtin`. Scenarios talk to the outside world through a
`ScenarioHost` (say a message, call `ask_user_question`, write to stderr), so this module
knows nothing about ACP or MCP wire details.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from clarion.agents.file_scenarios import read_reply, write_reply
from clarion.agents.scenario_questions import (
    ask_arguments,
    ask_default_arguments,
    ask_markdown_arguments,
    ask_multi_arguments,
)
from clarion.domain.permissions import TOOL_KINDS

SCENARIO_PREFIX = "/scenario"

LEFT_OPEN_REPLY = "Question left open; ending turn."
TIMEOUT_REPLY = "No answer yet; ending turn."


class ScenarioError(Exception):
    """The prompt named an unknown scenario or gave a bad argument; the text is the reply."""


@dataclass(frozen=True, slots=True)
class ScenarioCall:
    name: str
    args: Mapping[str, str]
    rest: str  # everything after the scenario name, words and key=value alike


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What an `ask_user_question` call came back with. `timed_out`: our own client gave up."""

    text: str = ""
    is_error: bool = False
    timed_out: bool = False
    failure: str | None = None  # transport or protocol failure, not a tool error


class ScenarioHost(Protocol):
    async def say(self, text: str) -> None: ...

    async def ask(
        self, arguments: dict[str, Any], *, read_timeout: float | None, report_end: bool
    ) -> ToolOutcome:
        """Call `ask_user_question`. `report_end=False` keeps silent after the tool returns."""
        ...

    def previous_prompt(self) -> str | None:
        """The session's prompt before the one running now (across restarts when the session
        was loaded), or None."""
        ...

    def write_stderr(self, nbytes: int) -> None: ...

    def working_directory(self) -> str:
        """The directory the session works in (ACP's `cwd`)."""
        ...

    def exit(self, code: int, message: str) -> None:
        """Write `message` to stderr and end the process at once with `code`."""
        ...

    async def request_permission(
        self,
        *,
        title: str,
        kind: str,
        raw_input: dict[str, Any],
        options: list[tuple[str, str, str]],
    ) -> str | None:
        """ACP `session/request_permission` for one tool call; the option id the client
        selected, or None when it answered `cancelled`. `options`: (option_id, name, kind)."""
        ...


Scenario = Callable[[ScenarioHost, ScenarioCall], Awaitable[None]]


def parse_scenario(text: str) -> ScenarioCall | None:
    """The scenario named on the prompt's first line, or None for an ordinary prompt."""
    first, _, tail = text.partition("\n")
    words = first.split()
    if not words or words[0] != SCENARIO_PREFIX:
        return None
    if len(words) < 2:
        raise ScenarioError("Usage: /scenario NAME [key=value ...]")
    name = words[1]
    rest_of_line = first.split(None, 2)[2] if len(words) > 2 else ""
    args = dict(w.split("=", 1) for w in words[2:] if "=" in w)
    rest = rest_of_line if not tail else f"{rest_of_line}\n{tail}"
    return ScenarioCall(name=name, args=args, rest=rest.strip())


def _number(call: ScenarioCall, key: str, default: float | None = None) -> float:
    raw = call.args.get(key)
    if raw is None:
        if default is None:
            raise ScenarioError(f"Scenario {call.name} needs {key}=<number>")
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ScenarioError(f"Scenario {call.name}: {key} must be a number, got {raw!r}") from None
    if value < 0:
        raise ScenarioError(f"Scenario {call.name}: {key} must not be negative")
    return value


def _reply_for(outcome: ToolOutcome) -> str:
    if outcome.timed_out:
        return TIMEOUT_REPLY
    if outcome.failure is not None:
        return f"Could not ask the question: {outcome.failure}"
    if outcome.is_error:
        return LEFT_OPEN_REPLY
    return f"You answered: {outcome.text}"


# --------------------------------------------------------------------------- scenarios


async def _echo(host: ScenarioHost, call: ScenarioCall) -> None:
    await host.say(f"echo: {call.rest}")


async def _ask(host: ScenarioHost, call: ScenarioCall) -> None:
    outcome = await host.ask(ask_arguments(), read_timeout=None, report_end=True)
    await host.say(_reply_for(outcome))


async def _ask_multi(host: ScenarioHost, call: ScenarioCall) -> None:
    outcome = await host.ask(ask_multi_arguments(), read_timeout=None, report_end=True)
    await host.say(_reply_for(outcome))


async def _ask_timeout(host: ScenarioHost, call: ScenarioCall) -> None:
    seconds = _number(call, "t")
    outcome = await host.ask(ask_arguments(), read_timeout=seconds, report_end=True)
    await host.say(_reply_for(outcome))


async def _ask_default(host: ScenarioHost, call: ScenarioCall) -> None:
    # `t=S`: our own client gives up after S seconds, as in ask-timeout; `expires=D`: the
    # call's `expires_in` (it may shorten the person's waiting policy, never lengthen it).
    seconds = _number(call, "t") if "t" in call.args else None
    arguments = ask_default_arguments(call.args.get("expires"))
    outcome = await host.ask(arguments, read_timeout=seconds, report_end=True)
    await host.say(_reply_for(outcome))


async def _ask_markdown(host: ScenarioHost, call: ScenarioCall) -> None:
    # `expires=D`: the call's `expires_in`, as in ask-default.
    arguments = ask_markdown_arguments()
    if "expires" in call.args:
        arguments["expires_in"] = call.args["expires"]
    outcome = await host.ask(arguments, read_timeout=None, report_end=True)
    await host.say(_reply_for(outcome))


async def _ask_silent(host: ScenarioHost, call: ScenarioCall) -> None:
    await host.ask(ask_arguments(), read_timeout=None, report_end=False)
    # Hold the turn open, saying nothing, until the client cancels it.
    await asyncio.Event().wait()


async def _recall(host: ScenarioHost, call: ScenarioCall) -> None:
    previous = host.previous_prompt()
    await host.say(f"Remembered: {previous}" if previous is not None else "Remembered: nothing")


async def _env(host: ScenarioHost, call: ScenarioCall) -> None:
    # What Clarion gave the agent, as JSON: the check that no server secret reaches agents.
    await host.say("env: " + json.dumps(dict(os.environ), sort_keys=True))


async def _stream(host: ScenarioHost, call: ScenarioCall) -> None:
    count = int(_number(call, "n", 10))
    delay = _number(call, "ms", 50) / 1000
    for i in range(1, count + 1):
        if i > 1 and delay:
            await asyncio.sleep(delay)
        await host.say(f"chunk {i}\n")


PERMISSION_OPTIONS = [
    ("allow", "Allow", "allow_once"),
    ("allow-always", "Always allow", "allow_always"),
    ("reject", "Reject", "reject_once"),
    ("reject-always", "Always reject", "reject_always"),
]


async def _ask_permission(host: ScenarioHost, call: ScenarioCall) -> str | None:
    kind = call.args.get("kind", "edit")
    if kind not in TOOL_KINDS:
        raise ScenarioError(f"Scenario {call.name}: kind must be one of {', '.join(TOOL_KINDS)}")
    title = call.args.get("title") or f"{kind.replace('_', ' ').capitalize()} README.md"
    raw_input: dict[str, Any] = (
        {"command": "make test", "cwd": "."}
        if kind == "execute"
        else {"path": "README.md", "content": "# Project\n\nUpdated by the agent.\n"}
    )
    chosen = await host.request_permission(
        title=title, kind=kind, raw_input=raw_input, options=list(PERMISSION_OPTIONS)
    )
    await host.say(f"Permission: {chosen if chosen is not None else 'cancelled'}")
    return chosen


async def _permission(host: ScenarioHost, call: ScenarioCall) -> None:
    await _ask_permission(host, call)


async def _permission_then_ask(host: ScenarioHost, call: ScenarioCall) -> None:
    await _ask_permission(host, call)
    await _ask(host, call)


async def _stderr_flood(host: ScenarioHost, call: ScenarioCall) -> None:
    host.write_stderr(int(_number(call, "bytes", 1024 * 1024)))
    await host.say("flooded")


class ScenarioFailure(Exception):
    """Raised out of the prompt on purpose: the agent answers it with a JSON-RPC error."""


async def _write(host: ScenarioHost, call: ScenarioCall) -> None:
    await host.say(write_reply(host.working_directory(), call.rest))


async def _read(host: ScenarioHost, call: ScenarioCall) -> None:
    await host.say(read_reply(host.working_directory(), call.rest))


async def _fail(host: ScenarioHost, call: ScenarioCall) -> None:
    raise ScenarioFailure(call.rest or "the scenario failed on purpose")


async def _exit(host: ScenarioHost, call: ScenarioCall) -> None:
    host.exit(int(_number(call, "code", 3)), call.rest or "the agent is exiting on purpose")


SCENARIOS: dict[str, Scenario] = {
    "echo": _echo,
    "ask": _ask,
    "ask-multi": _ask_multi,
    "ask-timeout": _ask_timeout,
    "ask-default": _ask_default,
    "ask-markdown": _ask_markdown,
    "ask-silent": _ask_silent,
    "recall": _recall,
    # An addition to the contract's table: the agent's environment (docs/security.md).
    "env": _env,
    "stream": _stream,
    "permission": _permission,
    "permission-then-ask": _permission_then_ask,
    "write": _write,
    "read": _read,
    # Test-only: proves the runtime keeps draining an agent's stderr.
    "stderr-flood": _stderr_flood,
    # Test-only: an errored prompt (the agent keeps running) and an agent that dies mid-turn.
    "fail": _fail,
    "exit": _exit,
}


# The scenarios that call the MCP tool. Only a hint: the agent starts loading its MCP client
# when a prompt names one, so that the sessions that never ask do not pay for it.
ASKING = frozenset(
    {
        "ask",
        "ask-multi",
        "ask-timeout",
        "ask-default",
        "ask-markdown",
        "ask-silent",
        "permission-then-ask",
    }
)


def may_ask(text: str) -> bool:
    """Whether the prompt names a scenario that calls the MCP tool."""
    try:
        call = parse_scenario(text)
    except ScenarioError:
        return False
    return call is not None and call.name in ASKING


async def play(host: ScenarioHost, text: str) -> None:
    """Run the prompt: a scenario if its first line names one, else acknowledge it."""
    try:
        call = parse_scenario(text)
        if call is None:
            await host.say(f"Received: {text}")
            return
        scenario = SCENARIOS.get(call.name)
        if scenario is None:
            known = ", ".join(sorted(SCENARIOS))
            raise ScenarioError(f"Unknown scenario {call.name!r}; known: {known}")
        await scenario(host, call)
    except ScenarioError as exc:
        await host.say(str(exc))
