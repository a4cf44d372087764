"""`clarion watch`: the live WebSocket event stream, one readable line per event, until Ctrl-C."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any

import typer
from websockets.exceptions import ConnectionClosed

from clarion.cli.connection import DEFAULT_SERVER, ServerOpt, TokenOpt, client_for
from clarion.client.errors import EXIT_SERVER_ERROR, EXIT_UNREACHABLE, CliError
from clarion.client.http import ClarionClient
from clarion.client.render import event_line
from clarion.client.sanitize import safe


def watch(
    task: Annotated[str | None, typer.Option("--task", help="Only this task's events")] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session's events")
    ] = None,
    raw: Annotated[bool, typer.Option("--json", help="Print each envelope as JSON")] = False,
    notify: Annotated[
        bool,
        typer.Option(
            "--notify",
            help="Print only a line per new question or permission request waiting for you,"
            " and ring the terminal bell",
        ),
    ] = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Print live events (tasks, sessions, turns, messages, questions) until Ctrl-C."""
    with client_for(server, token) as client:
        try:
            if notify:
                notify_inbox(client)
                return
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
                envelope = _receive(ws)
                if envelope.get("type") == "response":
                    continue
                _say(json.dumps(envelope) if raw else event_line(envelope))
        except ConnectionClosed as exc:
            raise CliError("the server closed the event stream", EXIT_UNREACHABLE) from exc


def notify_inbox(client: ClarionClient) -> None:
    """Read the inbox at start and again after every event; each item not seen before is one
    line, and a batch of new items rings the bell once."""
    seen: set[str] = set()
    with client.websocket() as ws:
        _say(f"Watching {client.base_url} for questions (Ctrl-C to stop)", err=True)
        _announce(client.inbox(), seen)
        try:
            while True:
                envelope = _receive(ws)
                if envelope.get("type") != "response":
                    _announce(client.inbox(), seen)
        except ConnectionClosed as exc:
            raise CliError("the server closed the event stream", EXIT_UNREACHABLE) from exc


def _announce(items: list[dict[str, Any]], seen: set[str]) -> None:
    fresh = [item for item in items if item.get("id") not in seen]
    for number, item in enumerate(fresh, start=1):
        seen.add(str(item.get("id")))
        # The bell ends the batch's last line: one ring per arrival, and a pipe reading lines
        # sees it with the line it belongs to.
        _say(inbox_line(item) + ("\a" if number == len(fresh) else ""))


def inbox_line(item: dict[str, Any]) -> str:
    """One line per inbox item: what waits, where, and the command that answers it."""
    task = item.get("task") or {}
    where = safe(task.get("title") or task.get("id") or "")
    item_id = safe(item.get("id"))
    if item.get("kind") == "permission":
        tool = safe((item.get("tool_call") or {}).get("title") or "a tool call")
        return f"PERMISSION {where}: {tool}  (clarion allow {item_id} / clarion reject {item_id})"
    questions = item.get("questions") or [{}]
    first = safe(questions[0].get("prompt") or questions[0].get("title") or "a question")
    more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
    return f"QUESTION {where}: {first}{more}  (clarion answer {item_id})"


# How long the main thread waits for an event before it looks for a pending Ctrl-C.
_WAKE_S = 0.5
# A busy server answers a subscription late; one that never does is reported, not waited on.
_SUBSCRIBE_S = 60.0


def _receive(ws: Any) -> dict[str, Any]:
    """The next envelope. The wait is cut into slices: the kernel may hand Ctrl-C to the
    WebSocket's reader thread, and Python raises KeyboardInterrupt in the main thread only
    when that thread runs again, which a wait with no event coming would never do."""
    while True:
        try:
            return dict(json.loads(ws.recv(timeout=_WAKE_S)))
        except TimeoutError:
            continue


def _await_subscribed(ws: Any) -> None:
    """Wait for the subscribe reply so a refused filter is reported, not silently ignored."""
    deadline = time.monotonic() + _SUBSCRIBE_S
    while True:
        try:
            envelope = json.loads(ws.recv(timeout=max(0.0, deadline - time.monotonic())))
        except TimeoutError as exc:
            raise CliError(
                f"subscribing: no reply from the server in {_SUBSCRIBE_S:.0f} s",
                EXIT_SERVER_ERROR,
            ) from exc
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
