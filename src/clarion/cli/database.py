"""The `--database` flag of the commands that open the database directly (`clarion db`,
`clarion token`), and the one rule for which database that is: the flag, else
`CLARION_DATABASE_URL`, else the same default as `clarion serve`."""

from __future__ import annotations

import os

import typer

from clarion.config import default_database_url

DatabaseOpt = typer.Option(
    None,
    "--database",
    help="sqlite:///PATH or postgresql://... [env CLARION_DATABASE_URL, default as serve]",
)


def database_url(database: str | None) -> str:
    return database or os.environ.get("CLARION_DATABASE_URL") or default_database_url(os.environ)
