"""How client commands show things: the task table, questions, and one line per live event.

Pure functions from wire dicts to Rich renderables or plain strings, so tests can check them
without a terminal. Server text always goes through `safe` (control characters and escape
sequences neutralised) and into Text objects: a prompt containing `[brackets]` must print as
written, never as Rich markup.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from clarion.client.errors import CliError, describe_response
from clarion.client.sanitize import safe

PENDING_ICON = "●"


def stdout() -> Console:
    return Console(highlight=False, soft_wrap=True)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def print_error(error: CliError) -> None:
    console = stderr()
    console.print(Text(safe(f"error: {error.message}"), style="bold red"))
    for line in error.details:
        console.print(Text(safe(f"  {line}"), style="red"))


def task_pending(task: dict[str, Any]) -> str | None:
    """The task's pending action from its status summary (legacy field as a fallback)."""
    summary = task.get("status_summary") or {}
    pending = summary.get("pending_action") or task.get("task_pending_action")
    return str(pending) if pending else None


def tasks_table(tasks: list[dict[str, Any]]) -> Table:
    table = Table(title=f"{len(tasks)} task(s)", title_justify="left")
    table.add_column(" ", no_wrap=True, width=1)
    table.add_column("ID", no_wrap=True, overflow="fold")
    table.add_column("Title")
    table.add_column("Step", no_wrap=True)
    table.add_column("Pending", no_wrap=True)
    for task in tasks:
        pending = task_pending(task)
        table.add_row(
            Text(PENDING_ICON, style="bold yellow") if pending else Text(""),
            Text(safe(task["id"])),
            Text(safe(task.get("title", ""))),
            Text(safe(task.get("workflow_step", ""))),
            Text(safe(pending or "-"), style="yellow" if pending else "dim"),
        )
    return table


def question_block(number: int, total: int, question: dict[str, Any]) -> Text:
    """One question with its numbered options, as `clarion answer` and `questions` show it."""
    text = Text()
    title = question.get("title") or ""
    heading = f"Question {number}/{total} [{question['id']}]"
    text.append(safe(heading + (f" {title}" if title else "")), style="bold")
    text.append("\n  " + safe(question.get("prompt", "")))
    for index, option in enumerate(question.get("options") or [], start=1):
        text.append(safe(f"\n    {index}) {option.get('label', '')}"), style="cyan")
        text.append(safe(f"  [{option.get('option_id', '')}]"), style="dim")
        if option.get("description"):
            text.append(safe(f"  {option['description']}"), style="dim")
    return text


def clip(value: Any, limit: int = 120) -> str:
    """`value` on one line (runs of white space one space), cut at `limit` with an ellipsis."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def event_line(envelope: dict[str, Any]) -> str:
    """One readable line for a WebSocket envelope: `HH:MM:SS action  what happened`."""
    action = str(envelope.get("action") or envelope.get("type") or "?")
    payload = envelope.get("payload") or {}
    stamp = str(envelope.get("timestamp") or "")
    clock = stamp[11:19] if len(stamp) >= 19 else stamp
    return safe(f"{clock} {action:<28} {_describe(action, payload, envelope)}".rstrip())


def _describe(action: str, p: dict[str, Any], envelope: dict[str, Any]) -> str:
    if envelope.get("type") == "error":
        return f"error {p.get('code')}: {p.get('message')}"
    if action == "task.created":
        task = p.get("task") or {}
        return f'task {task.get("id")} "{clip(task.get("title", ""), 60)}"'
    if action == "task.status_summary.updated":
        summary = p.get("status_summary") or {}
        pending = summary.get("pending_action") or "none"
        return f"task {p.get('task_id')} pending={pending} revision={summary.get('revision')}"
    if action == "session.state_changed":
        return f"session {p.get('session_id')} -> {p.get('new_state') or p.get('state')}"
    if action.startswith("session.turn."):
        meta = p.get("metadata") or {}
        notes = [k for k in ("lifecycle_only", "interrupted") if meta.get(k)]
        if meta.get("stop_reason"):
            notes.append(f"stop_reason={meta['stop_reason']}")
        tail = f" ({', '.join(notes)})" if notes else ""
        return f"session {p.get('session_id')} turn {p.get('id')}{tail}"
    if action.startswith("session.message."):
        return _describe_message(action, p)
    return clip(p, 160)


def _describe_message(action: str, p: dict[str, Any]) -> str:
    meta = p.get("metadata") or {}
    who = f"session {p.get('session_id')} {p.get('author_type')}/{p.get('type')}"
    if action.endswith(".deleted"):
        return f"{who} message {p.get('id')} deleted"
    if p.get("type") == "clarification_request":
        pid = meta.get("pending_id")
        status = meta.get("status", "")
        if action.endswith(".added") and status == "pending":
            return (
                f"{who} QUESTION {clip(p.get('content', ''), 100)} "
                f"(pending {pid}; answer: clarion answer {pid})"
            )
        answer = describe_response(_row_response(meta))
        return f"{who} question {pid} is {status}" + (f": {answer}" if answer else "")
    if p.get("type") == "permission_request":
        tool = meta.get("tool_call") or {}
        status = meta.get("status", "")
        title = clip(tool.get("title") or p.get("content", ""), 100)
        if status == "pending":
            return (
                f"{who} PERMISSION {title} (kind {tool.get('kind', 'other')}; decide: "
                f"clarion allow {p.get('id')} | clarion reject {p.get('id')})"
            )
        decision = meta.get("decision") or {}
        chosen = f": {decision['option_id']}" if decision.get("option_id") else ""
        by = f" by {meta['decided_by']}" if meta.get("decided_by") else ""
        return f"{who} permission {title} is {status}{chosen}{by}"
    if p.get("type") == "error":
        # The reason in full (it is one sentence); the agent's stderr follows on its own lines.
        reason, _, stderr_text = str(p.get("content", "")).partition("\n\n")
        tail = stderr_text.strip().splitlines()[-1:] if stderr_text.strip() else []
        return f"{who} ERROR {reason}" + (f" | {clip(tail[0], 200)}" if tail else "")
    return f"{who}: {clip(p.get('content', ''))}"


def _row_response(meta: dict[str, Any]) -> dict[str, Any] | None:
    response = meta.get("response")
    if not isinstance(response, dict) or "question_id" not in response:
        return None
    return {"answers": [response]}


_THEN = {"skip": "Skip", "default": "the default answer"}


def waiting_line(bundle: dict[str, Any], now: datetime) -> str | None:
    """The question's deadline and escalation in words ("expires in 3 h, then Skip"), or
    None when it waits under no policy that fires."""
    parts: list[str] = []
    expires_at = bundle.get("expires_at")
    if isinstance(expires_at, str):
        when = datetime.fromisoformat(expires_at)
        then = _THEN.get(str(bundle.get("on_expiry")), "Skip")
        parts.append(f"expires {_relative(when - now)} ({expires_at}), then {then}")
    escalated = bundle.get("escalated_to") or []
    if escalated:
        parts.append("escalated to " + ", ".join(str(u) for u in escalated))
    return "; ".join(parts) if parts else None


def _relative(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds <= 0:
        return "now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"in {round(seconds / size)} {unit}"
    return f"in {seconds} s"
