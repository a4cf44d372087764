"""`clarion review TASK_ID --comment PATH[:LINE]:TEXT [...] [--summary TEXT]`: send a review of
a task's changes to its agent, as one new turn (POST /tasks/{task_id}/review)."""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import quote

import typer

from clarion.cli.connection import DEFAULT_SERVER, ServerOpt, TokenOpt, client_for, handled
from clarion.client.errors import EXIT_USAGE, CliError
from clarion.client.render import stdout
from clarion.client.sanitize import safe

_WITH_LINE = re.compile(r"(?P<path>[^:]+):(?P<line>\d+):(?P<body>.*)", re.DOTALL)
_WITHOUT_LINE = re.compile(r"(?P<path>[^:]+):(?P<body>.*)", re.DOTALL)


def parse_comment(raw: str) -> dict[str, Any]:
    """`PATH:LINE:TEXT` or `PATH:TEXT` as the review body's comment; CliError (exit 2) for
    anything else."""
    match = _WITH_LINE.fullmatch(raw)
    line: int | None = None
    if match is not None:
        line = int(match["line"])
    else:
        match = _WITHOUT_LINE.fullmatch(raw)
    if match is None or not match["path"].strip() or not match["body"].strip():
        raise CliError(f"--comment {raw!r}: expected PATH[:LINE]:TEXT", EXIT_USAGE)
    comment: dict[str, Any] = {"path": match["path"].strip(), "body": match["body"].strip()}
    if line is not None:
        comment["line"] = line
    return comment


def review(
    task_id: Annotated[str, typer.Argument(help="The task whose changes you reviewed")],
    comment: Annotated[
        list[str] | None,
        typer.Option("--comment", "-c", help="PATH[:LINE]:TEXT, repeatable"),
    ] = None,
    summary: Annotated[
        str | None, typer.Option("--summary", "-s", help="The review's summary")
    ] = None,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Send a review to the task's agent: one new turn whose prompt lists your comments."""
    with handled():
        comments = [parse_comment(raw) for raw in comment or []]
        if not comments and not (summary and summary.strip()):
            raise CliError("give at least one --comment or a --summary", EXIT_USAGE)
    body: dict[str, Any] = {"comments": comments}
    if summary is not None:
        body["summary"] = summary
    with client_for(server, token) as client:
        reply = client.json(
            "POST",
            f"/tasks/{quote(task_id, safe='')}/review",
            json=body,
            what=f"the review of task {task_id}",
        )
    stdout().print(f"Review sent; the agent took it in turn {safe(str(reply['turn_id']))}.")


def register(app: typer.Typer) -> None:
    app.command("review")(review)
