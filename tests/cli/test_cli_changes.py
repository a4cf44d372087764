"""`clarion changes`: the diffstat table, the patches with --patch, and what it refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from clarion.cli.changes import show_changes
from clarion.workspaces.changes import read_changes
from tests.cli.cli_runner import run_cli
from tests.e2e.harness import ServerProcess, running_server
from tests.workspaces.gitrepo import add_worktree, make_repository, write


def printed(body: dict[str, Any], *, patches: bool) -> str:
    console = Console(record=True, width=200, color_system=None)
    show_changes(console, body, patches=patches)
    return console.export_text()


@pytest.fixture
async def body(tmp_path: Path) -> dict[str, Any]:
    """A real worktree's changes: a modified, an added, a renamed and a binary file."""
    repo = make_repository(
        tmp_path, {"notes.txt": "one\ntwo\n", "old name.txt": "".join(f"{n}\n" for n in range(30))}
    )
    worktree = add_worktree(repo, tmp_path / "wt", "clarion/t9")
    write(worktree, {"notes.txt": "one\n2\nthree\n", "new.py": "x = 1\n", "logo.png": b"\0\1\2"})
    (worktree / "old name.txt").rename(worktree / "new name.txt")
    return (await read_changes(worktree, "main", max_patch_bytes=100_000)).to_wire()


def test_the_table_has_one_row_per_file_and_the_totals(body: dict[str, Any]) -> None:
    text = printed(body, patches=False)
    assert "clarion/t9 against main" in text
    rows = {line.split()[-1]: line.split() for line in text.splitlines() if line.strip()}
    assert rows["notes.txt"][:3] == ["modified", "+2", "-1"]
    assert rows["new.py"][:3] == ["added", "+1", "-0"]
    assert rows["logo.png"][:2] == ["added", "binary"]
    assert "old name.txt → new name.txt" in text
    assert "4 file(s) changed, +3 -1" in text
    assert "diff --git" not in text


def test_patch_prints_every_files_patch_after_the_table(body: dict[str, Any]) -> None:
    text = printed(body, patches=True)
    assert text.index("4 file(s) changed") < text.index("diff --git a/notes.txt b/notes.txt")
    assert "-two\n+2\n+three\n" in text
    assert "Binary file logo.png differs" in text


def test_an_empty_change_set_says_so() -> None:
    body = {"base": "main", "branch": "clarion/x", "merge_base": "a" * 40, "head": "a" * 40,
            "files": [], "total_additions": 0, "total_deletions": 0}  # fmt: skip
    assert "No changes." in printed(body, patches=True)


def test_a_cut_patch_says_it_was_cut() -> None:
    entry = {"path": "big.txt", "old_path": None, "status": "added", "additions": 9000,
             "deletions": 0, "binary": False, "patch": "+a\n+b\n", "truncated": True}  # fmt: skip
    body = {"base": "main", "branch": "b", "merge_base": "m", "head": "h", "files": [entry],
            "total_additions": 9000, "total_deletions": 0}  # fmt: skip
    assert "the patch is cut here" in printed(body, patches=True)


def test_escape_sequences_and_markup_in_paths_and_patches_are_printed_not_obeyed() -> None:
    entry = {"path": "\x1b]0;owned\x07[bold]x[/bold].txt", "old_path": None, "status": "added",
             "additions": 1, "deletions": 0, "binary": False,
             "patch": "diff --git a/x b/x\n+\x1b[2J[red]wipe[/red]\n"}  # fmt: skip
    body = {"base": "main", "branch": "b", "merge_base": "m", "head": "h", "files": [entry],
            "total_additions": 1, "total_deletions": 0}  # fmt: skip
    text = printed(body, patches=True)
    assert "\x1b" not in text
    assert "\\x1b]0;owned\\x07[bold]x[/bold].txt" in text
    assert "+\\x1b[2J[red]wipe[/red]" in text


@pytest.mark.e2e
def test_changes_of_a_task_without_a_worktree_is_not_found(shared_server: ServerProcess) -> None:
    task_id = shared_server.create_task("No repository here")
    shown = run_cli(shared_server, "changes", task_id)
    assert shown.exit_code == 3, shown
    said = shown.stderr + shown.stdout
    assert "the task has no worktree" in said and "not_found" in said


@pytest.fixture(scope="module")
def repo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("cli-changes")
    repository = make_repository(tmp, {"README.md": "# App\n"})
    config = tmp / "clarion.toml"
    config.write_text(f'[repositories.app]\npath = "{repository}"\n', encoding="utf-8")
    with running_server(tmp, CLARION_CONFIG=str(config)) as server:
        yield server


@pytest.mark.e2e
def test_changes_prints_what_the_agent_wrote_in_the_tasks_worktree(
    repo_server: ServerProcess,
) -> None:
    task = repo_server.ok("POST", "/tasks", 201, json={"title": "CLI", "repository": "app"})
    session_id = repo_server.start_session(
        task["task"]["id"], "/scenario write path=notes/todo.md text=- [ ] ship it"
    )
    repo_server.wait_for_agent_text(session_id, "wrote notes/todo.md")

    table = run_cli(repo_server, "changes", task["task"]["id"])
    assert table.exit_code == 0, table
    assert f"clarion/{task['task']['id']} against main" in table.stdout
    row = next(line for line in table.stdout.splitlines() if "notes/todo.md" in line)
    assert row.split()[:3] == ["added", "+1", "-0"]
    assert "1 file(s) changed, +1 -0" in table.stdout
    assert "diff --git" not in table.stdout

    patched = run_cli(repo_server, "changes", task["task"]["id"], "--patch")
    assert patched.exit_code == 0, patched
    assert "diff --git a/notes/todo.md b/notes/todo.md" in patched.stdout
    assert "+- [ ] ship it" in patched.stdout
