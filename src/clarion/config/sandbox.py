"""Each agent profile's sandbox settings (`sandbox`, `extra_read`, `extra_write`, `home`,
`pids_max`, `memory_max`) and the server's own paths every sandbox hides (`HiddenPaths`).

Plain values only: whether bubblewrap works here and how the sandbox is built are the agent
layer's business (`clarion.agents.sandbox`); the keys' shapes are checked by
`clarion.config.agent_spec`. Imports nothing internal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

SandboxMode = Literal["auto", "bwrap", "none"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "bwrap", "none")


@dataclass(frozen=True, slots=True)
class HiddenPaths:
    """What no sandboxed agent may see, wherever it lies: Clarion's home (but the agent's own
    home inside it), the database file, the config file, and the task worktrees' folder (but
    the agent's own worktree)."""

    clarion_home: str | None = None
    database_file: str | None = None
    config_file: str | None = None
    worktrees_dir: str | None = None

    def directories(self) -> tuple[str, ...]:
        return tuple(p for p in (self.clarion_home, self.worktrees_dir) if p)

    def files(self) -> tuple[str, ...]:
        found = []
        if self.database_file:
            # SQLite's companions hold the same rows (the write-ahead log most recent ones).
            found += [self.database_file + s for s in ("", "-wal", "-shm", "-journal")]
        if self.config_file:
            found.append(self.config_file)
        return tuple(found)


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    mode: SandboxMode = "auto"
    extra_read: tuple[str, ...] = ()
    extra_write: tuple[str, ...] = ()
    # The agent's own home (None: a fresh one on the sandbox's private /tmp, for profiles
    # built in code without a Clarion home).
    home: str | None = None
    pids_max: int | None = None
    memory_max: int | None = None  # bytes
    hidden: HiddenPaths = field(default_factory=HiddenPaths)

    @property
    def limited(self) -> bool:
        return self.pids_max is not None or self.memory_max is not None


def hidden_paths(
    clarion_home: Path, database_url: str, config_file: str | None, worktrees_dir: str | None
) -> HiddenPaths:
    return HiddenPaths(
        clarion_home=real_path(str(clarion_home)),
        database_file=_sqlite_file(database_url),
        config_file=real_path(config_file) if config_file else None,
        worktrees_dir=real_path(worktrees_dir or str(clarion_home / "worktrees")),
    )


def agent_home(clarion_home: Path, profile: str) -> str:
    return real_path(str(clarion_home / "agent-homes" / profile))


def _sqlite_file(database_url: str) -> str | None:
    if not database_url.startswith("sqlite"):
        return None
    path = urlsplit(database_url).path
    # sqlite:///relative (three slashes) and sqlite:////absolute (four): the path after "/".
    path = path[1:] if path.startswith("/") else path
    if not path or path == ":memory:":
        return None
    return real_path(path if path.startswith("/") else os.path.abspath(path))


def real_path(path: str) -> str:
    # Mounts follow symbolic links: hiding or binding a link's target covers what it shows.
    return os.path.realpath(os.path.expanduser(path))
