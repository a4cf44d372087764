"""run_git: the git program without a shell, bounded in time, off the event loop."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from clarion.workspaces import git as git_module
from clarion.workspaces.git import GitError, run_git
from tests.workspaces.gitrepo import make_repository


async def test_output_and_exit_status_come_back(tmp_path: Path) -> None:
    repo = make_repository(tmp_path)
    result = await run_git(["ls-files"], cwd=repo)
    assert (result.returncode, result.text) == (0, "README.md\n")
    missing = await run_git(["rev-parse", "--verify", "--quiet", "nope"], cwd=repo, check=False)
    assert missing.returncode == 1


async def test_a_failure_raises_with_gits_own_words(tmp_path: Path) -> None:
    repo = make_repository(tmp_path)
    with pytest.raises(GitError, match="unknown revision") as raised:
        await run_git(["log", "no-such-branch"], cwd=repo)
    assert raised.value.git_args == ("log", "no-such-branch")
    assert "no-such-branch" in raised.value.stderr


async def test_stdin_is_handed_to_git(tmp_path: Path) -> None:
    repo = make_repository(tmp_path)
    result = await run_git(["hash-object", "--stdin"], cwd=repo, stdin=b"hello\n")
    assert result.text.strip() == "ce013625030ba8dba906f756967f9e9ca394464a"


async def test_a_call_past_its_deadline_is_killed_and_reported(tmp_path: Path) -> None:
    repo = make_repository(tmp_path)
    began = time.monotonic()
    with pytest.raises(GitError, match=r"took longer than 0\.3 s"):
        await run_git(["-c", "alias.nap=!sleep 30", "nap"], cwd=repo, timeout_s=0.3)
    assert time.monotonic() - began < 20  # a ceiling far under the sleep's 30 s: git was killed


async def test_the_callers_repository_variables_never_reach_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repository(tmp_path)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "other-index"))
    result = await run_git(["ls-files"], cwd=repo)
    assert result.text == "README.md\n"


async def test_no_git_on_path_is_a_git_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "git_executable", lambda: None)
    with pytest.raises(GitError, match="git is not installed"):
        await run_git(["status"], cwd=tmp_path)


async def test_a_missing_folder_is_a_git_error(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="could not start"):
        await run_git(["status"], cwd=tmp_path / "gone")


async def test_calls_run_side_by_side_without_holding_the_loop(tmp_path: Path) -> None:
    repo = make_repository(tmp_path)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    ticker = asyncio.create_task(tick())
    try:
        results = await asyncio.gather(*(run_git(["ls-files"], cwd=repo) for _ in range(12)))
    finally:
        ticker.cancel()
    assert all(r.text == "README.md\n" for r in results)
    assert ticks > 1  # the loop kept turning while git ran
