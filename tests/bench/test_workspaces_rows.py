"""The workspaces rows of the benchmark still run: a worktree of a generated repository, the
changes of a worktree over HTTP and in-process, live cycles with and without a worktree (tiny
sizes, no timing asserted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bench.workspaces import WorkspaceSizes, change_files, make_repository, rows

from tests.workspaces.gitrepo import add_worktree, git

pytestmark = pytest.mark.e2e


def test_the_changed_files_are_the_number_asked_for(tmp_path: Path) -> None:
    repo = make_repository(tmp_path, 30)
    worktree = add_worktree(repo, tmp_path / "wt", "clarion/t")
    change_files(worktree, 10)
    changed = (
        git(worktree, "diff", "--name-only", "main").split()
        + git(worktree, "ls-files", "--others", "--exclude-standard").split()
    )
    assert len(set(changed)) == 10


async def test_every_workspaces_row_has_a_figure(tmp_path: Path) -> None:
    sizes = WorkspaceSizes(files=40, changed=5, samples=1, cycle_blocks=1, cycles_per_block=1)
    measured = await asyncio.wait_for(rows(tmp_path, sizes), 240)
    assert [row.name for row in measured] == [
        "task worktree made, 40-file repository p50",
        "GET /tasks/{id}/changes, 5 changed files (40-file repository) p50",
        "read_changes in-process, 5 changed files (40-file repository) p50",
        "server CPU per live cycle (builtin agent), task with a worktree / without",
    ]
    assert all(row.value.endswith(" ms") and "ms CPU each" in row.note for row in measured[:3])
    assert measured[3].value.endswith("x") and "1 cycles each" in measured[3].note
