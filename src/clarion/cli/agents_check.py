"""`clarion agents check PROFILE [--config FILE]`: does this agent profile work with Clarion?

Starts the profile's agent as the server would, and reports one row per check: the command
starts, the agent answers the ACP handshake within the bound, opens a session, and sees
`ask_user_question` (it connected to the MCP endpoint the session offered and listed its tools;
the endpoint is a probe this command serves on a loopback port for the check). Then it stops
the agent. Exit 0 when all pass, 1 when one fails, 2 for an unknown profile or a bad config.
"""

from __future__ import annotations

import asyncio

import typer

from clarion.cli.doctor import Check, show_checks
from clarion.cli.errors import fail
from clarion.config import AgentProfile, Settings

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_PROMPT_TIMEOUT_S = 120.0
NEVER_CONNECTED = (
    "MCP server ignored: the agent never connected to the endpoint it was given "
    "(Gemini CLI ignores MCP servers in a folder it does not trust, for example)"
)
NEVER_LISTED = "the agent connected to the MCP endpoint but never listed its tools"

agents_app = typer.Typer(help="Check agent profiles.", no_args_is_help=True)


async def run_check(profile: AgentProfile, reply_bound: float, prompt_bound: float) -> list[Check]:
    # Imported here: other `clarion` commands start without the ACP and MCP stacks.
    from clarion.agents.check import CHECK_SESSION, check_agent
    from clarion.cli.mcp_probe import serve_probe

    async with serve_probe(CHECK_SESSION) as (url, sightings):

        async def mcp_seen(within: float) -> str | None:
            try:
                await asyncio.wait_for(sightings.listed.wait(), within)
            except TimeoutError:
                return NEVER_LISTED if sightings.connected.is_set() else NEVER_CONNECTED
            return None

        steps = await check_agent(
            profile, url, mcp_seen, reply_bound=reply_bound, prompt_bound=prompt_bound
        )
    return [Check(f"{profile.name}: {s.name}", s.ok, s.detail) for s in steps]


@agents_app.command("check")
def check(
    profile: str = typer.Argument(..., help="The agent profile's name ([agents.NAME])"),
    config: str | None = typer.Option(None, "--config", help="TOML file [env CLARION_CONFIG]"),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        help="Seconds for each ACP reply (default: the profile's start_timeout, else 30)",
    ),
    prompt_timeout: float = typer.Option(
        DEFAULT_PROMPT_TIMEOUT_S,
        "--prompt-timeout",
        help="Seconds for the one prompt sent when the agent had not listed the tools yet",
    ),
) -> None:
    """Start PROFILE's agent, check its ACP handshake and that it sees ask_user_question, stop
    it; exit 0 when all pass, 1 otherwise, 2 for an unknown profile or a bad config."""
    try:
        settings = Settings.load(config_file=config)
    except ValueError as exc:
        raise fail(str(exc), 2) from exc
    found = settings.agents.get(profile)
    if found is None:
        known = ", ".join(sorted(settings.agents))
        raise fail(f"unknown agent profile {profile!r} (known: {known})", 2)
    if timeout is not None and timeout <= 0:
        raise fail("--timeout must be positive", 2)
    bound = timeout or found.start_timeout or DEFAULT_TIMEOUT_S
    checks = asyncio.run(run_check(found, bound, prompt_timeout))
    show_checks(checks)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(agents_app, name="agents")
