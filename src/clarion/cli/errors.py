"""How a command that runs without a server fails: one line on stderr and an exit code of
docs/cli.md (client/errors.py)."""

from __future__ import annotations

import typer

from clarion.client.errors import EXIT_SERVER_ERROR


def fail(message: str, code: int = EXIT_SERVER_ERROR) -> typer.Exit:
    """A command that runs without a server (serve, db, token, agents check) failing: one
    line `clarion: message` on stderr, and the Exit for the caller to raise."""
    typer.echo(f"clarion: {message}", err=True)
    return typer.Exit(code)
