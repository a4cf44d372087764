"""`clarion doctor [--config FILE]`: is this installation able to run? One row per check
(config, database and schema, bus, each agent profile's command and sandbox, each webhook, each
Slack channel's bot token and channel, git and each configured repository), each `ok` or the
reason it failed; exit 0 when all pass, 1 otherwise.

It reads what `clarion serve` would read (flags' env vars, the config file) and changes
nothing: the database is only read, a webhook only has a TCP connection opened to it (a POST
could set off whatever the receiver does), an agent only has its command looked up (and
bubblewrap, for its sandbox, is run once with `true` as the agent), a Slack bot token is only
checked with `auth.test` and its channel looked up (`conversations.info`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import typer
from rich.table import Table

from clarion.cli.database import checked_url, missing_database
from clarion.client.render import stdout
from clarion.client.sanitize import safe
from clarion.config import AgentProfile, Settings
from clarion.config.files import redacted
from clarion.config.slack import SlackChannel

_REACH_S = 5.0


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str


async def _database(url: str) -> Check:
    # Imported here: every other `clarion` command starts without the database layer.
    from clarion.store import open_engine
    from clarion.store.db.schema_status import schema_status

    name = f"database {redacted(url)}"
    missing = missing_database(url)
    if missing is not None:  # opening it would create it, and its directories
        return Check(name, False, f"no database at {missing}")
    engine = open_engine(url)
    try:
        found = await asyncio.wait_for(schema_status(engine), _REACH_S * 2)
    except Exception as exc:
        return Check(name, False, f"cannot read it: {exc}")
    finally:
        await engine.dispose()
    if found.newer_than_code:
        return Check(name, False, f"schema {found.version} is newer than this Clarion's")
    if found.pending:
        return Check(
            name,
            False,
            f"schema version {found.version}, migrations pending "
            f"({', '.join(map(str, found.pending))}): run clarion db upgrade",
        )
    return Check(name, True, f"ok (schema version {found.version})")


async def _bus(url: str) -> Check:
    from clarion.bus import open_bus
    from clarion.bus.unavailable import NatsUnavailable

    name = f"bus {url}"
    try:
        bus = open_bus(url)
        async with asyncio.timeout(_REACH_S):
            async with bus:
                pass
    except NatsUnavailable as exc:  # its message says what could not be reached, and why
        return Check(name, False, str(exc))
    except Exception as exc:
        return Check(name, False, f"cannot connect: {exc or type(exc).__name__}")
    return Check(name, True, "ok")


def _agent(profile: AgentProfile) -> Check:
    name = f"agent {profile.name}"
    program = profile.command[0]
    found = shutil.which(program, path=profile.env.get("PATH", os.environ.get("PATH")))
    if found is None:
        return Check(name, False, f"command not found: {program}")
    if profile.cwd is not None and not Path(profile.cwd).is_dir():
        return Check(name, False, f"cwd is not a directory: {profile.cwd}")
    return Check(name, True, f"ok ({found}; found, not started)")


def _sandbox(profile: AgentProfile) -> Check:
    """What the profile's agents run under, as `clarion serve` would decide it: a `bwrap`
    profile bubblewrap cannot run, or a limit no cgroup can enforce, fails; `auto` without a
    working bubblewrap passes but says the agents run unsandboxed."""
    # Imported here: only this check needs the agent layer.
    from clarion.agents.limits import limits_problem
    from clarion.agents.sandbox import SandboxUnavailable, bwrap_problem, effective_mode

    name = f"sandbox {profile.name}"
    config = profile.sandbox
    try:
        mode = effective_mode(config)
    except SandboxUnavailable as exc:
        return Check(name, False, f'sandbox = "bwrap" but bubblewrap cannot run it: {exc}')
    if mode == "bwrap":
        detail = "bwrap (bubblewrap works)"
    elif config.mode == "none":
        detail = 'none (sandbox = "none")'
    else:
        detail = f'none: WARNING, runs unsandboxed (sandbox = "auto"): {bwrap_problem()}'
    if config.limited:
        problem = limits_problem()
        if problem is not None:
            return Check(name, False, f"{detail}; pids_max/memory_max set but {problem}")
        detail += f"; limits pids_max={config.pids_max}, memory_max={config.memory_max}"
    return Check(name, True, detail)


async def _webhook(url: str, secret: str) -> Check:
    name = f"webhook {url}"
    if not secret.strip():
        return Check(name, False, "no secret set: deliveries could not be signed")
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        async with asyncio.timeout(_REACH_S):
            _, writer = await asyncio.open_connection(parts.hostname, port)
        writer.close()
    except (OSError, TimeoutError) as exc:
        return Check(name, False, f"unreachable: {exc or 'no answer in 5 s'}")
    return Check(name, True, "ok (reachable, secret set)")


async def _slack(channel: SlackChannel) -> list[Check]:
    """Slack's `auth.test` with the channel's bot token (the token is valid and the API
    reachable), then the configured channel itself (`conversations.info`, or a name looked
    up): Slack's `channel_not_found` or `missing_scope` fail it. Nothing is posted."""
    from clarion.slack.client import SlackApi, slack_error

    token_row = f"slack {channel.key}"
    channel_row = f"slack channel {channel.key}"
    api = SlackApi(channel, timeout_s=int(_REACH_S))
    try:
        async with asyncio.timeout(_REACH_S * 2):
            found = await api.auth_test()
    except Exception as exc:  # slack-sdk's SlackApiError names Slack's error (invalid_auth)
        detail = f"auth.test failed: {slack_error(exc)}"
        return [
            Check(f"{token_row} ({channel.channel})", False, detail),
            Check(f"{channel_row} ({channel.channel})", False, "not checked: the token failed"),
        ]
    token = Check(
        f"{token_row} ({channel.channel})",
        True,
        f"ok (team {found.get('team')}, bot user {found.get('user')})",
    )
    try:
        async with asyncio.timeout(_REACH_S * 2):
            info = await api.find_channel(channel.channel)
    except Exception as exc:
        detail = f"{slack_error(exc)}: the bot cannot see this channel"
        if "missing_scope" in detail:
            detail += " (the app needs the channels:read and groups:read scopes)"
        return [token, Check(f"{channel_row} ({channel.channel})", False, detail)]
    detail = f"ok (#{info.get('name')}, {info.get('id')})"
    if info.get("is_member") is False:
        detail += "; the bot is not a member: invite it, or keep chat:write.public"
    return [token, Check(f"{channel_row} ({channel.channel})", True, detail)]


async def run_checks(settings: Settings) -> list[Check]:
    checks = [await _database(settings.database_url), await _bus(settings.bus_url)]
    for profile in settings.agents.values():
        checks += [_agent(profile), _sandbox(profile)]
    checks.extend([await _webhook(h.url, h.secret) for h in settings.webhooks])
    for channel in settings.slack.channels():
        checks.extend(await _slack(channel))
    return checks


def git_checks(settings: Settings) -> list[Check]:
    """git (needed once a repository is configured) and each repository: a git repository
    whose base branch exists."""
    from clarion.workspaces.checks import checked_repository, git_version

    repositories = settings.repositories.repositories
    version = git_version()
    if version is None:
        needed = bool(repositories)
        detail = "not installed (no `git` on PATH)" + (
            ", and a repository is configured" if needed else "; needed only for [repositories]"
        )
        checks = [Check("git", not needed, detail)]
    else:
        checks = [Check("git", True, f"ok ({version})")]
    for name, repository in sorted(repositories.items()):
        row = f"repository {name}"
        try:
            checked = checked_repository(repository, settings.repositories.config_file)
        except (ValueError, OSError) as exc:
            checks.append(Check(row, False, str(exc)))
            continue
        checks.append(Check(row, True, f"ok ({checked.path}, base {checked.base})"))
    return checks


def doctor(
    config: str | None = typer.Option(None, "--config", help="TOML file [env CLARION_CONFIG]"),
    database: str | None = typer.Option(
        None, "--database", help="sqlite:///PATH or postgresql://... [env CLARION_DATABASE_URL]"
    ),
    bus: str | None = typer.Option(
        None, "--bus", help="memory or nats://... [env CLARION_BUS_URL]"
    ),
) -> None:
    """Check config, database and schema, bus, agent profiles and webhooks; a table, exit 0
    when all pass, 1 otherwise."""
    where = config or os.environ.get("CLARION_CONFIG") or "(none)"
    if database is not None:
        checked_url(database)  # a usage error, before any check runs
    try:
        settings = Settings.load(config_file=config, database_url=database, bus_url=bus)
    except ValueError as exc:
        show_checks([Check(f"config {where}", False, str(exc))])
        raise typer.Exit(1) from exc
    checks = [
        Check(f"config {where}", True, "ok"),
        *asyncio.run(run_checks(settings)),
        *git_checks(settings),
    ]
    show_checks(checks)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


def show_checks(checks: list[Check]) -> None:
    """The checks as a table: name, ok or FAIL, and the detail (the reason for a failure)."""
    table = Table("check", "result", "detail")
    mark: Callable[[bool], str] = lambda ok: "ok" if ok else "FAIL"  # noqa: E731
    for check in checks:
        table.add_row(safe(check.name), mark(check.ok), safe(check.detail))
    stdout().print(table)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
