"""read_changes on real git worktrees: what a task changed since its merge base with `base`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clarion.workspaces.changes import read_changes
from clarion.workspaces.git import GitError
from tests.workspaces.gitrepo import (
    add_worktree,
    commit_all,
    git,
    index_bytes,
    make_repository,
    write,
)

WIRE_KEYS = {
    "base", "branch", "merge_base", "head", "files", "total_additions", "total_deletions",
}  # fmt: skip
FILE_KEYS = {"path", "old_path", "status", "additions", "deletions", "binary", "patch"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repository(
        tmp_path,
        {
            "README.md": "hello\n",
            "src/app.py": "def main():\n    return 1\n",
            "notes.txt": "one\ntwo\nthree\n",
            "long.txt": "".join(f"line {n} of a file that moves\n" for n in range(40)),
            ".gitignore": "*.log\nbuild/\n",
        },
    )


@pytest.fixture
def worktree(repo: Path, tmp_path: Path) -> Path:
    return add_worktree(repo, tmp_path / "wt", "clarion/t1")


def by_path(wire: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in wire["files"]}


async def test_an_untouched_worktree_has_no_changes(worktree: Path) -> None:
    wire = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()
    head = git(worktree, "rev-parse", "HEAD").strip()
    assert wire == {
        "base": "main",
        "branch": "clarion/t1",
        "merge_base": head,
        "head": head,
        "files": [],
        "total_additions": 0,
        "total_deletions": 0,
    }


async def test_a_modified_file_shows_its_counts_and_patch(worktree: Path) -> None:
    write(worktree, {"notes.txt": "one\n2\nthree\nfour\n"})
    wire = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()
    assert set(wire) == WIRE_KEYS
    [entry] = wire["files"]
    assert set(entry) == FILE_KEYS
    assert entry["path"] == "notes.txt" and entry["old_path"] is None
    assert entry["status"] == "modified" and not entry["binary"]
    assert (entry["additions"], entry["deletions"]) == (2, 1)
    assert entry["patch"].startswith("diff --git a/notes.txt b/notes.txt\n")
    assert "-two\n+2\n" in entry["patch"] and "+four\n" in entry["patch"]
    assert (wire["total_additions"], wire["total_deletions"]) == (2, 1)


async def test_an_untracked_file_is_added_and_left_unstaged_in_the_real_index(
    worktree: Path,
) -> None:
    write(worktree, {"src/new_module.py": "x = 1\ny = 2\n"})
    entry = by_path((await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire())[
        "src/new_module.py"
    ]
    assert entry["status"] == "added" and entry["additions"] == 2 and entry["deletions"] == 0
    assert "+x = 1\n" in entry["patch"]
    # The worktree's own index still does not know the file: the agent's state is as it left it.
    assert git(worktree, "status", "--porcelain") == "?? src/new_module.py\n"
    assert git(worktree, "ls-files", "src") == "src/app.py\n"


async def test_reading_changes_writes_nothing_to_the_index_or_the_object_store(
    repo: Path, worktree: Path
) -> None:
    write(worktree, {"fresh.txt": "a brand new blob\n", "notes.txt": "changed\n"})
    index_before = index_bytes(worktree)
    objects_before = git(repo, "count-objects", "-v")
    await read_changes(worktree, "main", max_patch_bytes=10_000)
    assert index_bytes(worktree) == index_before
    assert git(repo, "count-objects", "-v") == objects_before
    assert git(repo, "status", "--porcelain") == ""


async def test_a_deleted_file_shows_as_deleted(worktree: Path) -> None:
    (worktree / "README.md").unlink()
    [entry] = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()["files"]
    assert (entry["path"], entry["status"]) == ("README.md", "deleted")
    assert (entry["additions"], entry["deletions"]) == (0, 1)
    assert "-hello\n" in entry["patch"]


async def test_a_moved_file_is_a_rename_with_its_old_path(worktree: Path) -> None:
    # Moved without git: the old path is simply gone and the new one untracked.
    (worktree / "long.txt").rename(worktree / "docs long.txt")
    [entry] = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()["files"]
    assert entry["status"] == "renamed"
    assert (entry["path"], entry["old_path"]) == ("docs long.txt", "long.txt")
    assert (entry["additions"], entry["deletions"]) == (0, 0)


async def test_a_renamed_and_edited_file_keeps_its_rename_and_counts(worktree: Path) -> None:
    git(worktree, "mv", "long.txt", "moved.txt")
    text = (worktree / "moved.txt").read_text().replace("line 3 of", "LINE 3 of")
    write(worktree, {"moved.txt": text})
    [entry] = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()["files"]
    assert (entry["status"], entry["path"], entry["old_path"]) == (
        "renamed",
        "moved.txt",
        "long.txt",
    )
    assert (entry["additions"], entry["deletions"]) == (1, 1)
    assert "+LINE 3 of" in entry["patch"]


async def test_a_binary_file_is_flagged_with_zero_counts_and_an_empty_patch(worktree: Path) -> None:
    write(worktree, {"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff"})
    [entry] = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()["files"]
    assert entry == {
        "path": "logo.png",
        "old_path": None,
        "status": "added",
        "additions": 0,
        "deletions": 0,
        "binary": True,
        "patch": "",
    }


async def test_ignored_files_are_left_out(worktree: Path) -> None:
    write(worktree, {"debug.log": "noise\n", "build/out.txt": "artefact\n", "kept.txt": "yes\n"})
    wire = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()
    assert [f["path"] for f in wire["files"]] == ["kept.txt"]


async def test_committed_and_uncommitted_changes_show_together(worktree: Path) -> None:
    write(worktree, {"src/app.py": "def main():\n    return 2\n"})
    commit_all(worktree, "agent's commit")
    write(worktree, {"notes.txt": "one\ntwo\nthree\nfour\n", "untracked.md": "# new\n"})
    wire = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()
    files = by_path(wire)
    assert set(files) == {"src/app.py", "notes.txt", "untracked.md"}
    assert files["src/app.py"]["status"] == "modified"
    assert files["untracked.md"]["status"] == "added"
    assert wire["head"] != wire["merge_base"]
    assert (wire["total_additions"], wire["total_deletions"]) == (3, 1)


async def test_a_commit_that_reverts_an_uncommitted_edit_shows_no_change(worktree: Path) -> None:
    write(worktree, {"notes.txt": "changed\n"})
    commit_all(worktree, "change")
    write(worktree, {"notes.txt": "one\ntwo\nthree\n"})
    wire = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()
    assert wire["files"] == []


async def test_the_merge_base_ignores_what_the_base_gained_after_branching(
    repo: Path, worktree: Path
) -> None:
    branched_at = git(repo, "rev-parse", "main").strip()
    write(repo, {"upstream.txt": "landed on main later\n", "README.md": "hello, edited upstream\n"})
    commit_all(repo, "main moves on")
    write(worktree, {"mine.txt": "the task's own file\n"})
    wire = (await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire()
    assert wire["merge_base"] == branched_at
    assert [f["path"] for f in wire["files"]] == ["mine.txt"]


async def test_names_with_spaces_and_unicode_arrive_as_written(worktree: Path) -> None:
    write(worktree, {"my notes/été résumé.txt": "ça va\n", "a b.txt": "x\n"})
    files = by_path((await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire())
    assert set(files) == {"my notes/été résumé.txt", "a b.txt"}
    assert "+ça va\n" in files["my notes/été résumé.txt"]["patch"]
    assert files["a b.txt"]["patch"].startswith("diff --git a/a b.txt b/a b.txt\n")


async def test_untracked_names_that_look_like_patterns_are_taken_literally(
    worktree: Path,
) -> None:
    # Each untracked file is added by its exact name: a glob or pathspec magic in a name
    # neither matches other files nor fails.
    names = ["*.py", "[ab].txt", ":(exclude)x", ":!y", "a\tb.txt", "new/\\odd?"]
    write(worktree, {name: f"{name}\n" for name in names})
    files = by_path((await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire())
    assert set(files) == set(names)
    assert all(files[name]["status"] == "added" for name in names)
    assert all(f"+{name}\n" in files[name]["patch"] for name in names)


async def test_a_name_git_quotes_still_gets_its_own_patch(worktree: Path) -> None:
    write(worktree, {'say "hi".txt': "quoted\n", "plain.txt": "plain\n"})
    files = by_path((await read_changes(worktree, "main", max_patch_bytes=10_000)).to_wire())
    assert "+quoted\n" in files['say "hi".txt']["patch"]
    assert "+plain\n" in files["plain.txt"]["patch"]


async def test_a_large_patch_is_cut_on_a_line_and_marked_truncated(worktree: Path) -> None:
    write(worktree, {"big.txt": "".join(f"é line {n}\n" for n in range(2000)), "small.txt": "s\n"})
    files = by_path((await read_changes(worktree, "main", max_patch_bytes=1000)).to_wire())
    big = files["big.txt"]
    assert big["truncated"] is True
    assert len(big["patch"].encode()) <= 1000 and big["patch"].endswith("\n")
    assert big["additions"] == 2000  # the counts are the whole file's, not the cut patch's
    assert "truncated" not in files["small.txt"]


async def test_a_single_long_line_is_cut_inside_it_but_not_inside_a_character(
    worktree: Path,
) -> None:
    write(worktree, {"one.txt": "é" * 5000})
    [entry] = (await read_changes(worktree, "main", max_patch_bytes=501)).to_wire()["files"]
    assert entry["truncated"] is True
    assert "\ufffd" not in entry["patch"]
    assert len(entry["patch"].encode()) <= 501


async def test_a_base_that_does_not_exist_is_a_git_error(worktree: Path) -> None:
    with pytest.raises(GitError):
        await read_changes(worktree, "no-such-branch", max_patch_bytes=10_000)


async def test_a_folder_that_is_not_a_repository_is_a_git_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError):
        await read_changes(plain, "main", max_patch_bytes=10_000)


async def test_an_option_looking_base_is_refused_before_git_runs(worktree: Path) -> None:
    with pytest.raises(GitError, match="not a branch name"):
        await read_changes(worktree, "--output=/tmp/x", max_patch_bytes=10_000)


async def test_reading_from_a_subfolder_still_sees_the_whole_worktree(worktree: Path) -> None:
    write(worktree, {"top.txt": "t\n", "src/inner.txt": "i\n"})
    wire = (await read_changes(worktree / "src", "main", max_patch_bytes=10_000)).to_wire()
    assert sorted(f["path"] for f in wire["files"]) == ["src/inner.txt", "top.txt"]
