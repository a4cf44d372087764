"""Each agent profile's sandbox settings (`sandbox`, `extra_read`, `extra_write`, `home`,
`pids_max`, `memory_max`) and the server's own paths every sandbox hides (`HiddenPaths`).

Plain values only: whether bubblewrap works here and how the sandbox is built are the agent
layer's business (`clarion.agents.sandbox`). Imports only the configuration models.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, field_validator

from clarion.config.spec import AbsolutePath, PositiveInteger, Spec

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


def _absolute_paths(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
        isinstance(p, str) and os.path.isabs(p) for p in value
    ):
        raise ValueError("must be a list of absolute paths")
    return tuple(value)


_SIZE = re.compile(r"(\d+)\s*([kmgt]?)i?b?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MIN_MEMORY = 1 << 20  # less and not even the agent's interpreter starts


def _bytes(value: Any) -> int:
    """An integer of bytes or a size such as `512M`, `2G`, `2GiB`."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (m := _SIZE.fullmatch(value.strip())):
        size = int(m.group(1)) * _UNITS[m.group(2).lower()]
    else:
        raise ValueError(f"must be a size such as 512M or 2G, got {value!r}")
    if size < MIN_MEMORY:
        raise ValueError(f"must be at least 1M, got {value!r}")
    return size


AbsolutePaths = Annotated[tuple[str, ...], BeforeValidator(_absolute_paths)]
Size = Annotated[int, BeforeValidator(_bytes)]


def hidden_paths(
    clarion_home: Path, database_url: str, config_file: str | None, worktrees_dir: str | None
) -> HiddenPaths:
    return HiddenPaths(
        clarion_home=_real(str(clarion_home)),
        database_file=_sqlite_file(database_url),
        config_file=_real(config_file) if config_file else None,
        worktrees_dir=_real(worktrees_dir or str(clarion_home / "worktrees")),
    )


def agent_home(clarion_home: Path, profile: str) -> str:
    return _real(str(clarion_home / "agent-homes" / profile))


class SandboxKeys(Spec):
    """A profile's sandbox keys, as its table in the file holds them."""

    sandbox: SandboxMode = "auto"
    extra_read: AbsolutePaths = ()
    extra_write: AbsolutePaths = ()
    home: AbsolutePath | None = None
    pids_max: PositiveInteger | None = None
    memory_max: Size | None = None

    @field_validator("sandbox", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        if value not in SANDBOX_MODES:
            raise ValueError(f"must be one of auto, bwrap, none; got {value!r}")
        return value

    def sandbox_config(self, *, default_home: str, hidden: HiddenPaths) -> SandboxConfig:
        """The profile's sandbox; its home is `default_home` unless the table sets one."""
        return SandboxConfig(
            mode=self.sandbox,
            extra_read=tuple(_real(p) for p in self.extra_read),
            extra_write=tuple(_real(p) for p in self.extra_write),
            home=_real(self.home or default_home),
            pids_max=self.pids_max,
            memory_max=self.memory_max,
            hidden=hidden,
        )


def _sqlite_file(database_url: str) -> str | None:
    if not database_url.startswith("sqlite"):
        return None
    path = urlsplit(database_url).path
    # sqlite:///relative (three slashes) and sqlite:////absolute (four): the path after "/".
    path = path[1:] if path.startswith("/") else path
    if not path or path == ":memory:":
        return None
    return _real(path if path.startswith("/") else os.path.abspath(path))


def _real(path: str) -> str:
    # Mounts follow symbolic links: hiding or binding a link's target covers what it shows.
    return os.path.realpath(os.path.expanduser(path))
