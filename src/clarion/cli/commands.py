"""Client commands that read or create things: tasks, task create, session start, questions.

Registered on the root Typer app by `register`; each talks to a running server over HTTP.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.text import Text

from clarion.cli.connection import DEFAULT_SERVER, ServerOpt, TokenOpt, client_for
from clarion.cli.permissions import pending_permissions, show_permission
from clarion.client.http import ClarionClient
from clarion.client.render import question_block, stdout, tasks_table, waiting_line
from clarion.client.sanitize import safe

ACTIVE_STATES = ("active_live", "active_detached")

task_app = typer.Typer(help="Create tasks.", no_args_is_help=True)
session_app = typer.Typer(help="Start and show agent sessions.", no_args_is_help=True)


def tasks(server: ServerOpt = DEFAULT_SERVER, token: TokenOpt = None) -> None:
    """List tasks; a yellow dot marks a task waiting for your answer."""
    with client_for(server, token) as client:
        listed = client.tasks()
    console = stdout()
    if not listed:
        console.print("No tasks yet. Create one with: clarion task create TITLE")
        return
    console.print(tasks_table(listed))


@task_app.command("create")
def task_create(
    title: Annotated[str, typer.Argument(help="The task's title")],
    description: Annotated[
        str, typer.Option("--description", "-d", help="Also the default first prompt")
    ] = "",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the task id")] = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Create a task (it starts in the backlog step)."""
    with client_for(server, token) as client:
        task = client.create_task(title, description)
    if quiet:
        typer.echo(safe(task["id"]))
        return
    stdout().print(Text(safe(f"Created task {task['id']}: {task['title']}")))


@session_app.command("start")
def session_start(
    task_id: Annotated[str, typer.Argument(help="The task to work on")],
    agent: Annotated[str, typer.Option("--agent", help="Agent profile name")] = "builtin",
    prompt: Annotated[
        str | None,
        typer.Option("--prompt", "-p", help="First prompt (default: the task's description)"),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the session id")] = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Start an agent session on a task and send its first prompt."""
    with client_for(server, token) as client:
        session = client.start_session(task_id, agent=agent, prompt=prompt)
    if quiet:
        typer.echo(safe(session["id"]))
        return
    stdout().print(
        Text(
            safe(
                f"Started session {session['id']} on agent {session['agent']} ({session['state']})"
            )
        )
    )
    stdout().print(Text(safe(f"Follow it with: clarion watch --session {session['id']}")))


@session_app.command("show")
def session_show(
    session_id: Annotated[str, typer.Argument(help="The session's id")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Show a session: its state, agent, task and, in a cluster, the replica that runs it."""
    with client_for(server, token) as client:
        session = client.session(session_id)
    lines = [
        f"Session {session['id']} on agent {session['agent']}: {session['state']}",
        f"  task {session['task_id']}",
    ]
    if session.get("pending_action"):
        lines.append(f"  waiting for: {session['pending_action']}")
    if session.get("replica_id"):
        lines.append(f"  replica {session['replica_id']}")
    if session.get("error"):
        lines.append(f"  error: {session['error']}")
    for line in lines:
        stdout().print(Text(safe(line)))


Found = list[tuple[dict[str, Any], dict[str, Any]]]


def _needs_a_look(meta: dict[str, Any], *, ambiguous: bool) -> bool:
    # Only a bundle with a pending row can be active, and only an answered one can be
    # ambiguous: the rest is not worth a read.
    if meta.get("status") == "pending":
        return True
    return ambiguous and meta.get("delivery") == "ambiguous"


def find_open_items(client: ClarionClient, *, ambiguous: bool = False) -> tuple[Found, Found]:
    """(task, bundle) for every bundle that can be answered now (with `ambiguous`, also every
    answer a restart left possibly undelivered) and (task, request) for every pending
    permission request, oldest task first, from one pass over the transcripts."""
    found: Found = []
    permissions: Found = []
    for task in client.tasks():
        for session in client.sessions(task["id"]):
            candidates: list[str] = []
            transcript = client.messages(session["id"])
            permissions.extend(pending_permissions(client, task, transcript))
            for message in transcript:
                meta = message.get("metadata") or {}
                if message.get("type") != "clarification_request" or not _needs_a_look(
                    meta, ambiguous=ambiguous
                ):
                    continue
                pid = meta.get("pending_id")
                if pid and pid not in candidates:
                    candidates.append(pid)
            for pid in candidates:
                bundle = client.bundle(pid)
                if bundle.get("state") in ACTIVE_STATES or (
                    ambiguous and bundle.get("delivery") == "ambiguous"
                ):
                    found.append((task, bundle))
    return found, permissions


def find_open_questions(client: ClarionClient) -> Found:
    """(task, bundle) for every bundle that can be answered now, oldest task first."""
    return find_open_items(client)[0]


def questions(
    show_all: Annotated[
        bool,
        typer.Option(
            "--all", help="Also list answers the agent may not have received (after a restart)"
        ),
    ] = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """List every question you can answer now, and every permission request waiting for
    your decision, across all tasks and sessions."""
    with client_for(server, token) as client:
        found, permissions = find_open_items(client, ambiguous=show_all)
    console = stdout()
    if not found and not permissions:
        console.print("No open questions.")
        return
    for task, request in permissions:
        show_permission(console, task, request)
    for task, bundle in found:
        ambiguous = bundle.get("delivery") == "ambiguous"
        header = Text()
        header.append(safe(bundle["pending_id"]), style="bold yellow")
        state = "answered, delivery ambiguous" if ambiguous else bundle["state"]
        header.append(safe(f"  {state}  task {task['id']}: {task.get('title', '')}"))
        console.print(header)
        deadline = waiting_line(bundle, datetime.now(UTC))
        if deadline is not None:
            console.print(Text(safe(f"  {deadline}"), style="magenta"))
        total = len(bundle["questions"])
        for number, question in enumerate(bundle["questions"], start=1):
            console.print(question_block(number, total, question))
        if ambiguous:
            console.print(
                "  The server restarted while handing this answer to the agent: the agent may"
                " not have received it."
            )
            again = f"  send it again with: clarion resend {bundle['pending_id']}\n"
            console.print(Text(safe(again)))
        else:
            console.print(Text(safe(f"  answer with: clarion answer {bundle['pending_id']}\n")))


def resend(
    pending_id: Annotated[str, typer.Argument(help="The question's pending id")],
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Send an answer the agent may not have received again, as a new turn."""
    with client_for(server, token) as client:
        result = client.resend(pending_id)
    stdout().print(Text(safe(f"Answer sent again in turn {result['turn_id']}.")))


def register(app: typer.Typer) -> None:
    app.command("tasks")(tasks)
    app.command("questions")(questions)
    app.command("resend")(resend)
    app.add_typer(task_app, name="task")
    app.add_typer(session_app, name="session")
