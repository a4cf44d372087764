"""Real temporary git repositories for the workspace tests, driven by the git program itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_AUTHOR_NAME": "Clarion Tests",
    "GIT_AUTHOR_EMAIL": "tests@clarion.invalid",
    "GIT_COMMITTER_NAME": "Clarion Tests",
    "GIT_COMMITTER_EMAIL": "tests@clarion.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` (synchronously: test set-up, not the code under test)."""
    done = subprocess.run(
        ["git", *args], cwd=repo, env=_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repository(root: Path, files: dict[str, str | bytes] | None = None) -> Path:
    """A repository on `main` with one commit holding `files`."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, files or {"README.md": "hello\n"})
    commit_all(repo, "initial")
    return repo


def write(repo: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def add_worktree(repo: Path, target: Path, branch: str, base: str = "main") -> Path:
    git(repo, "worktree", "add", "-q", "-b", branch, str(target), base)
    return target


def index_bytes(worktree: Path) -> bytes:
    """The worktree's own index file, byte for byte."""
    path = git(worktree, "rev-parse", "--path-format=absolute", "--git-path", "index").strip()
    return Path(path).read_bytes()
