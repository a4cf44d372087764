"""`clarion watch`: the live WebSocket event stream, one readable line per event, until Ctrl-C."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from websockets.exceptions import ConnectionClosed

from clarion.cli.client import ClarionClient
from clarion.cli.connection import DEFAULT_SERVER, ServerOpt, TokenOpt, client_for
from clarion.cli.errors import EXIT_SERVER_ERROR, EXIT_UNREACHABLE, CliError
from clarion.cli.render import event_line


def watch(
    task: Annotated[str | None, typer.Option("--task", help="Only this task's events")] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session's events")
    ] = None,
    raw: Annotated[bool, typer.Option("--json", help="Print each envelope as JSON")] = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Print live events (tasks, sessions, turns, messages, questions) until Ctrl-C."""
    with client_for(server, token) as client:
        try:
            stream(client, task_id=task, session_id=session, raw=raw)
        except KeyboardInterrupt:
            # Ctrl-C is how a watch ends: a normal stop, exit 0.
            _say("stopped", err=True)


def stream(
    client: ClarionClient, *, task_id: str | None, session_id: str | None, raw: bool
) -> None:
    with client.websocket() as ws:
        filters = {k: v for k, v in (("task_id", task_id), ("session_id", session_id)) if v}
        if filters:
            ws.send(
                json.dumps(
                    {"type": "request", "id": "watch-1", "action": "subscribe", "payload": filters}
                )
            )
            _await_subscribed(ws)
        _say(f"Watching {client.base_url} (Ctrl-C to stop)", err=True)
        try:
            while True:
                envelope = json.loads(ws.recv())
                if envelope.get("type") == "response":
                    continue
                _say(json.dumps(envelope) if raw else event_line(envelope))
        except ConnectionClosed as exc:
            raise CliError("the server closed the event stream", EXIT_UNREACHABLE) from exc


def _await_subscribed(ws: Any) -> None:
    """Wait for the subscribe reply so a refused filter is reported, not silently ignored."""
    while True:
        envelope = json.loads(ws.recv(timeout=10))
        if envelope.get("id") != "watch-1":
            continue
        if envelope.get("type") == "error":
            payload = envelope.get("payload") or {}
            raise CliError(
                f"subscribing: {payload.get('message')} ({payload.get('code')})",
                EXIT_SERVER_ERROR,
            )
        return


def _say(line: str, *, err: bool = False) -> None:
    # One write and a flush per event: a pipe (or a test) sees each line as it happens.
    target = sys.stderr if err else sys.stdout
    target.write(line + "\n")
    target.flush()


def register(app: typer.Typer) -> None:
    app.command("watch")(watch)
