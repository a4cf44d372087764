"""The checks `clarion serve` and `clarion doctor` make of the configured repositories.

They run before the server's event loop exists (and in the CLI, which has none), so they call
git synchronously, still without a shell and within a bounded time. A failure is a ValueError
naming the config file and the key, which `clarion serve` prints on one line before it exits
with status 2.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

from clarion.config.repositories import Repository, RepositorySettings
from clarion.workspaces.git import git_executable

CHECK_TIMEOUT_S = 15.0


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    executable = git_executable()
    if executable is None:
        raise ValueError("git is not installed (no `git` on PATH)")
    return subprocess.run(
        [executable, *args],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT_S,
        check=False,
        env={"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "PATH": os.environ.get("PATH", "")},
    )


def checked_repository(repository: Repository, config_file: str | None) -> Repository:
    """The repository with its base resolved; ValueError naming the file and key when its
    path is not a git repository or its base does not exist there."""
    where = f"{config_file or 'config'}: repositories.{repository.name}"
    if git_executable() is None:
        raise ValueError(
            f"{where}: git is not installed (no `git` on PATH), and a repository is configured"
        )
    if not repository.path.is_dir():
        raise ValueError(f"{where}.path: {repository.path} is not a directory")
    top = _git(["rev-parse", "--show-toplevel"], repository.path)
    if top.returncode != 0:
        raise ValueError(f"{where}.path: {repository.path} is not a git repository")
    base = repository.base
    if base is None:
        head = _git(["symbolic-ref", "--quiet", "--short", "HEAD"], repository.path)
        if head.returncode != 0 or not head.stdout.strip():
            raise ValueError(
                f"{where}.base: not set, and {repository.path} has no branch checked out"
            )
        base = head.stdout.strip()
    found = _git(
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{base}^{{commit}}"], top_dir(top)
    )
    if found.returncode != 0:
        raise ValueError(f"{where}.base: branch {base!r} does not exist in {repository.path}")
    return dataclasses.replace(repository, base=base)


def top_dir(result: subprocess.CompletedProcess[str]) -> Path:
    return Path(result.stdout.strip())


def checked_repositories(settings: RepositorySettings) -> RepositorySettings:
    """Every configured repository checked, with its base resolved."""
    checked = {
        name: checked_repository(repo, settings.config_file)
        for name, repo in settings.repositories.items()
    }
    return dataclasses.replace(settings, repositories=checked)


def git_version() -> str | None:
    """`git --version`'s output, or None when git is not installed."""
    if git_executable() is None:
        return None
    result = _git(["--version"], Path("/"))
    return result.stdout.strip() or None
