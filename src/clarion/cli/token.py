"""`clarion token create`: issue an API token for a user in a workspace.

Imported by the CLI app only. It opens the database directly (migrating it if needed), so it
works whether or not a server runs on it; a running server sees the new token on its next
request. The token goes to stdout as one line and nothing else; only its hash is stored.
"""

from __future__ import annotations

import asyncio

import typer

from clarion.cli.database import DatabaseOpt, database_url
from clarion.cli.errors import fail
from clarion.config.files import redacted
from clarion.orchestrator.access import hash_token, new_api_token
from clarion.runtime.clock import SystemClock

token_app = typer.Typer(
    help="API tokens for access control (`clarion serve --auth`).",
    no_args_is_help=True,
    add_completion=False,
)


@token_app.callback()
def _group() -> None:
    """API tokens for access control (`clarion serve --auth`)."""


_MAX_NAME = 200  # the users.name and workspaces.name column width


def _name(value: str, flag: str) -> str:
    name = value.strip()
    if not name or len(name) > _MAX_NAME:
        raise fail(f"{flag} must be 1 to {_MAX_NAME} characters", 2)
    return name


async def _issue(url: str, user: str, workspace: str, token_hash: str) -> None:
    # Imported here, not at the top: every other command talks HTTP, and the database layer
    # (SQLAlchemy) would double the start-up of each of them.
    from clarion.store import open_store

    async with open_store(url, SystemClock()) as store:
        await store.stores.access.issue_api_token(
            user=user, workspace=workspace, token_hash=token_hash
        )


@token_app.command("create")
def create(
    user: str = typer.Option(..., "--user", help="User name; created if new"),
    workspace: str = typer.Option(..., "--workspace", help="Workspace name; created if new"),
    database: str | None = DatabaseOpt,
) -> None:
    """Create the user and workspace if needed, make the user a member, print a new token."""
    user_name = _name(user, "--user")
    workspace_name = _name(workspace, "--workspace")
    url = database_url(database)
    token = new_api_token()
    try:
        asyncio.run(_issue(url, user_name, workspace_name, hash_token(token)))
    except Exception as exc:  # the reason, never a traceback with the token in a local
        raise fail(f"cannot create a token in {redacted(url)}: {exc}") from exc
    typer.echo(token)


def register(app: typer.Typer) -> None:
    app.add_typer(token_app, name="token")
