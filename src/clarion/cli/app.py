"""Typer application: `clarion serve` and the client commands."""

from __future__ import annotations

import asyncio
import dataclasses
import faulthandler
import gc
import ipaddress
import os
import sys
from collections.abc import Callable

import typer

from clarion.cli import (
    agents_check,
    answer,
    changes,
    commands,
    db,
    demo,
    doctor,
    permissions,
    review,
    token,
    watch,
)
from clarion.cli.database import unsupported
from clarion.cli.errors import fail
from clarion.cli.logs import configure_logging
from clarion.config import Settings
from clarion.config.files import redacted

app = typer.Typer(
    help="Clarion: durable clarification lifecycle for AI coding agents.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Clarion: durable clarification lifecycle for AI coding agents."""


# Client commands: each module registers its own commands. Further command groups register
# here, one line each.
commands.register(app)
answer.register(app)
permissions.register(app)
watch.register(app)
demo.register(app)
token.register(app)
db.register(app)
doctor.register(app)
agents_check.register(app)
changes.register(app)
review.register(app)


def _event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed (it is a dependency on Linux and macOS): the server spends
    a large share of its time in the event loop itself, which uvloop runs in C."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _checked_repositories(settings: Settings) -> Settings:
    """Settings whose repositories git confirmed, each base resolved; ValueError otherwise."""
    if not settings.repositories.repositories:
        return settings
    from clarion.workspaces.checks import checked_repositories

    return dataclasses.replace(settings, repositories=checked_repositories(settings.repositories))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command()
def serve(
    host: str | None = typer.Option(None, help="Bind address [env CLARION_HOST]"),
    port: int | None = typer.Option(None, help="Port [env CLARION_PORT, default 8787]"),
    database: str | None = typer.Option(
        None, "--database", help="sqlite:///PATH or postgresql://... [env CLARION_DATABASE_URL]"
    ),
    bus: str | None = typer.Option(
        None, "--bus", help="memory or nats://host:port [env CLARION_BUS_URL]"
    ),
    config: str | None = typer.Option(None, "--config", help="TOML file [env CLARION_CONFIG]"),
    auth: bool | None = typer.Option(None, "--auth/--no-auth", help="Require API tokens"),
    insecure_no_auth: bool = typer.Option(
        False, "--insecure-no-auth", help="Allow a non-loopback host without auth"
    ),
    cluster: bool | None = typer.Option(
        None, "--cluster/--no-cluster", help="Join a cluster of replicas [env CLARION_CLUSTER]"
    ),
    advertise_url: str | None = typer.Option(
        None, "--advertise-url", help="This replica's URL for its peers [env CLARION_ADVERTISE_URL]"
    ),
    log_level: str = typer.Option(os.environ.get("CLARION_LOG_LEVEL", "INFO"), "--log-level"),
    no_migrate: bool = typer.Option(
        False,
        "--no-migrate",
        help="Refuse to start on an old schema instead of migrating it (see clarion db)",
    ),
    log_format: str = typer.Option(
        os.environ.get("CLARION_LOG_FORMAT", "text"),
        "--log-format",
        help="text (key=value lines) or json (one object per line) [env CLARION_LOG_FORMAT]",
    ),
) -> None:
    """Start the server. Binds HTTP first, then runs startup recovery before admitting work."""
    # The server's imports make a few hundred thousand objects that live as long as the
    # process; the collector walking them again and again while they are made cost a tenth of
    # a start's CPU. Nothing they make is garbage worth collecting meanwhile.
    gc.disable()
    try:
        from clarion.agents.sandbox import check_profiles
        from clarion.server.serving import (
            AnotherServer,
            RecoveryFailed,
            ServiceUnreachable,
            run_server,
        )
        from clarion.store.db.schema_status import SchemaBehind
    finally:
        gc.enable()

    try:
        configure_logging(log_level.upper(), log_format.lower())
    except ValueError as exc:
        raise fail(str(exc), 2) from exc
    # A fatal signal in C code (a driver, the event loop) leaves every thread's Python stack
    # on stderr, in the server's log, instead of a bare exit status.
    faulthandler.enable()
    try:
        settings = Settings.load(
            host=host,
            port=port,
            database_url=database,
            bus_url=bus,
            config_file=config,
            auth=auth,
            insecure_no_auth=insecure_no_auth,
            cluster=cluster,
            advertise_url=advertise_url,
        )
        # Each profile's sandbox and limits, as this machine can honour them (or exit 2).
        check_profiles(settings.agents, settings.config_file)
    except ValueError as exc:
        raise fail(str(exc), 2) from exc
    try:
        settings = _checked_repositories(settings)
    except ValueError as exc:
        raise fail(str(exc), 2) from exc
    reason = unsupported(settings.database_url)
    if reason is not None:
        raise fail(reason, 2)
    if no_migrate:
        settings = dataclasses.replace(
            settings, operations=dataclasses.replace(settings.operations, migrate=False)
        )
    if not settings.auth and not settings.insecure_no_auth and not _is_loopback(settings.host):
        raise fail(
            f"refusing to serve on {settings.host} without --auth "
            "(pass --insecure-no-auth to allow it)",
            2,
        )

    def announce(url: str) -> None:
        typer.echo(f"Clarion is listening on {url} (database {redacted(settings.database_url)})")
        sys.stdout.flush()

    try:
        with asyncio.Runner(loop_factory=_event_loop_factory()) as runner:
            runner.run(run_server(settings, announce))
    except (RecoveryFailed, ServiceUnreachable, SchemaBehind) as exc:
        raise fail(str(exc), 1) from exc
    except AnotherServer as exc:
        raise fail(str(exc), 3) from exc
    except KeyboardInterrupt:
        pass
