"""`clarion allow` / `clarion reject`: decide an agent's pending permission request, and how
`clarion questions` shows the pending ones.

The server decides whether the decision still counts: it answers 409 when the request was
already decided or its agent call is over.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from clarion.cli.connection import DEFAULT_SERVER, ServerOpt, TokenOpt, client_for
from clarion.client.errors import EXIT_CONFLICT, CliError
from clarion.client.http import ClarionClient
from clarion.client.render import clip, stdout
from clarion.client.sanitize import safe

INPUT_PREVIEW = 300

AlwaysOpt = Annotated[
    bool, typer.Option("--always", help="Pick the agent's 'always' option for this tool")
]


def choose_option(request: dict[str, Any], verdict: str, always: bool) -> dict[str, Any]:
    """The request's option for allow/reject (`always`: the *_always kind), falling back to
    the other kind of the same verdict when the agent did not offer it."""
    once, forever = f"{verdict}_once", f"{verdict}_always"
    order = (forever, once) if always else (once, forever)
    options = request.get("options") or []
    for kind in order:
        for option in options:
            if option.get("kind") == kind:
                return dict(option)
    offered = ", ".join(f"{o.get('option_id')} ({o.get('kind')})" for o in options) or "none"
    raise CliError(
        f"the agent offered no option to {verdict} this request", EXIT_CONFLICT, (offered,)
    )


def _decide(message_id: str, verdict: str, always: bool, server: str, token: str | None) -> None:
    with client_for(server, token) as client:
        request = client.permission(message_id)
        option = choose_option(request, verdict, always)
        result = client.decide_permission(message_id, {"option_id": option["option_id"]})
    line = Text(f"{result.get('state', verdict)}: ", style="bold green")
    line.append(f"{option.get('name') or option['option_id']} [{option['option_id']}]")
    if not result.get("delivered", False):
        line.append("  (the agent was no longer waiting)", style="yellow")
    stdout().print(line)


def allow(
    message_id: Annotated[str, typer.Argument(help="The permission request's message id")],
    always: AlwaysOpt = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Allow an agent's pending permission request."""
    _decide(message_id, "allow", always, server, token)


def reject(
    message_id: Annotated[str, typer.Argument(help="The permission request's message id")],
    always: AlwaysOpt = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Reject an agent's pending permission request."""
    _decide(message_id, "reject", always, server, token)


def pending_permissions(
    client: ClarionClient, task: dict[str, Any], messages: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(task, request) for each of these transcript rows that is a pending permission request."""
    found: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for message in messages:
        meta = message.get("metadata") or {}
        if message.get("type") != "permission_request" or meta.get("status") != "pending":
            continue
        request = client.permission(str(message["id"]))
        if request.get("state") == "pending":
            found.append((task, request))
    return found


def show_permission(console: Console, task: dict[str, Any], request: dict[str, Any]) -> None:
    """One pending request; everything the agent supplied is sanitised before printing."""
    tool = request.get("tool_call") or {}
    header = Text()
    header.append(safe(str(request["message_id"])), style="bold yellow")
    header.append(safe(f"  permission  task {task['id']}: {task.get('title', '')}"))
    console.print(header)
    body = Text("  ")
    body.append(safe(str(tool.get("title", ""))), style="bold")
    body.append(safe(f"  (kind {tool.get('kind', 'other')})"), style="dim")
    if tool.get("raw_input") is not None:
        preview = clip(tool["raw_input"], INPUT_PREVIEW)
        body.append(safe(f"\n  input: {preview}"), style="dim")
    for option in request.get("options") or []:
        body.append(safe(f"\n    {option.get('name', '')}"), style="cyan")
        kind = f"  [{option.get('option_id', '')}, {option.get('kind', '')}]"
        body.append(safe(kind), style="dim")
    console.print(body)
    mid = request["message_id"]
    console.print(
        Text(safe(f"  decide with: clarion allow {mid} [--always] | clarion reject {mid}\n"))
    )


def register(app: typer.Typer) -> None:
    app.command("allow")(allow)
    app.command("reject")(reject)
