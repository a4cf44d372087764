"""Running the `git` program: no shell, a bounded time, off the event loop.

We drive the git command line rather than a library: it is what a person debugs a worktree with
(`git worktree list`, `git diff`), its output formats are stable for scripts (`--porcelain`,
`-z`), and the Python libraries wrap the same program anyway. Each call is an asyncio subprocess
with its arguments as a list, so no argument is ever read by a shell, and a call that outlives its
deadline is killed and reported as a `GitError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT_S = 30.0

# Git reads these from the environment; a server started inside a git hook or another worktree
# would otherwise point every call at the wrong repository.
_REPOSITORY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


class GitError(Exception):
    """A git call failed, timed out, or git is not installed; `args` and `stderr` say which."""

    def __init__(self, message: str, *, args: Sequence[str] = (), stderr: str = "") -> None:
        super().__init__(message)
        self.git_args = tuple(args)
        self.stderr = stderr


@dataclass(frozen=True, slots=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")


def git_executable() -> str | None:
    """The `git` program on PATH, or None when git is not installed."""
    return shutil.which("git")


def _environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_ENV}
    # Never stop to ask for credentials or an editor: a server has no one to answer.
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "LC_ALL": "C"})
    if extra:
        env.update(extra)
    return env


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> GitResult:
    """Run `git ARGS` in `cwd`; with `check`, a non-zero exit raises `GitError`."""
    executable = git_executable()
    if executable is None:
        raise GitError("git is not installed (no `git` on PATH)", args=args)
    try:
        process = await asyncio.create_subprocess_exec(
            executable,
            *args,
            cwd=str(cwd),
            env=_environment(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise GitError(f"git could not start in {cwd}: {exc}", args=args) from exc
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(stdin), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise GitError(
            f"git {' '.join(args[:2])} took longer than {timeout_s:g} s", args=args
        ) from None
    result = GitResult(process.returncode or 0, stdout, stderr.decode("utf-8", errors="replace"))
    if check and result.returncode != 0:
        raise GitError(
            f"git {' '.join(args[:2])} failed ({result.returncode}): {result.stderr.strip()[:500]}",
            args=args,
            stderr=result.stderr,
        )
    return result
