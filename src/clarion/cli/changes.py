"""`clarion changes TASK_ID [--patch]`: what a task's agent changed in its worktree.

A diffstat table (status, +N -M, path) with totals, and with `--patch` each file's patch after
it. Everything the server sends (paths, patch lines) passes through `safe` into Text objects: a
patch is the agent's text and may carry escape sequences or `[markup]`.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from clarion.cli.connection import DEFAULT_SERVER, ServerOpt, TokenOpt, client_for
from clarion.client.render import stdout
from clarion.client.sanitize import safe

_STATUS_STYLE = {"added": "green", "deleted": "red", "renamed": "cyan", "modified": "yellow"}


def _short(commit: Any) -> str:
    return safe(str(commit or "")[:12])


def changes_heading(body: dict[str, Any]) -> Text:
    branch = body.get("branch") or "(detached)"
    return Text(
        safe(
            f"{branch} against {body.get('base')} (merge base {_short(body.get('merge_base'))},"
            f" head {_short(body.get('head'))})"
        )
    )


def _path_cell(entry: dict[str, Any]) -> Text:
    path = safe(entry.get("path", ""))
    old = entry.get("old_path")
    return Text(f"{safe(old)} → {path}" if old and old != entry.get("path") else path)


def _counts_cell(entry: dict[str, Any]) -> Text:
    if entry.get("binary"):
        return Text("binary", style="dim")
    text = Text()
    text.append(f"+{int(entry.get('additions') or 0)}", style="green")
    text.append(" ")
    text.append(f"-{int(entry.get('deletions') or 0)}", style="red")
    return text


def diffstat_table(body: dict[str, Any]) -> Table:
    """One row per file: status, +N -M (or `binary`), path; the totals as the caption."""
    files = body.get("files") or []
    table = Table(
        caption=(
            f"{len(files)} file(s) changed, +{int(body.get('total_additions') or 0)}"
            f" -{int(body.get('total_deletions') or 0)}"
        ),
        caption_justify="left",
        box=None,
        pad_edge=False,
    )
    table.add_column("Status", no_wrap=True)
    table.add_column("+/-", no_wrap=True)
    table.add_column("Path", overflow="fold")
    for entry in files:
        status = str(entry.get("status", ""))
        table.add_row(
            Text(safe(status), style=_STATUS_STYLE.get(status, "")),
            _counts_cell(entry),
            _path_cell(entry),
        )
    return table


def patch_text(entry: dict[str, Any]) -> Text:
    """A file's patch, coloured by line, with a note when the server cut it or it is binary."""
    text = Text()
    if entry.get("binary"):
        text.append(safe(f"Binary file {entry.get('path', '')} differs\n"), style="dim")
        return text
    for line in str(entry.get("patch") or "").splitlines(keepends=True):
        style = ""
        if line.startswith(("diff --git", "index ", "--- ", "+++ ")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        text.append(safe(line), style=style)
    if text.plain and not text.plain.endswith("\n"):
        text.append("\n")
    if entry.get("truncated"):
        text.append("… the patch is cut here (the server's per-file limit)\n", style="magenta")
    return text


def show_changes(console: Console, body: dict[str, Any], *, patches: bool) -> None:
    console.print(changes_heading(body))
    if not body.get("files"):
        console.print("No changes.")
        return
    console.print(diffstat_table(body))
    if patches:
        console.print(Group(*(patch_text(entry) for entry in body["files"])))


def changes(
    task_id: Annotated[str, typer.Argument(help="The task whose worktree to read")],
    patch: Annotated[bool, typer.Option("--patch", "-p", help="Also print every patch")] = False,
    server: ServerOpt = DEFAULT_SERVER,
    token: TokenOpt = None,
) -> None:
    """Show what changed in a task's worktree since it left its base: committed, uncommitted
    and untracked files."""
    with client_for(server, token) as client:
        body = client.call(
            "GET",
            f"/tasks/{quote(task_id, safe='')}/changes",
            what=f"the changes of task {task_id}",
        ).json()
    show_changes(stdout(), body, patches=patch)


def register(app: typer.Typer) -> None:
    app.command("changes")(changes)
