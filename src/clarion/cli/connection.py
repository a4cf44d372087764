"""Options and error handling every client command shares.

`ServerOpt`/`TokenOpt` are the `--server`/`--token` flags; `client_for` opens a client and turns
expected failures (CliError, Ctrl-C) into a message and an exit code instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from clarion.client.errors import CliError
from clarion.client.http import DEFAULT_SERVER, ClarionClient
from clarion.client.render import print_error, stderr

__all__ = ["DEFAULT_SERVER", "ServerOpt", "TokenOpt", "client_for", "handled"]

ServerOpt = Annotated[
    str,
    typer.Option(
        "--server",
        envvar="CLARION_SERVER",
        help="Base URL of the Clarion server [env CLARION_SERVER]",
    ),
]
TokenOpt = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="CLARION_TOKEN",
        help="API token when the server runs with --auth [env CLARION_TOKEN]",
    ),
]


@contextmanager
def handled() -> Iterator[None]:
    """Print a CliError as a message and exit with its code; Ctrl-C exits 130 quietly."""
    try:
        yield
    except CliError as error:
        print_error(error)
        raise typer.Exit(error.exit_code) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def waiting(what: str, seconds: float) -> None:
    """A long request's progress, on stderr so stdout stays clean for scripts."""
    stderr().print(f"… still {what} ({seconds:.0f}s; the server bounds its own waits)")


@contextmanager
def client_for(server: str, token: str | None) -> Iterator[ClarionClient]:
    with handled(), ClarionClient(server, token=token, progress=waiting) as client:
        yield client
