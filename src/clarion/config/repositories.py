"""`[repositories.NAME]`, `[workspaces.NAME] repository`, `worktrees_dir` and `max_patch_bytes`
from the config file (docs/workspaces.md).

Imports only `clarion.config.files`. The shape is checked here (a bad value raises ValueError
naming the file and the key); whether a path is a git repository and its base exists is asked
of git by `clarion.workspaces.checks` when `clarion serve` starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clarion.config.files import read_config

DEFAULT_MAX_PATCH_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Repository:
    name: str
    path: Path
    # The branch new task branches are made from; None until resolved to the branch checked
    # out at `path` (clarion.workspaces.checks).
    base: str | None = None


@dataclass(frozen=True, slots=True)
class RepositorySettings:
    repositories: Mapping[str, Repository] = field(default_factory=dict)
    # workspace name -> the repository its new tasks get by default
    workspace_defaults: Mapping[str, str] = field(default_factory=dict)
    # None: $CLARION_HOME/worktrees
    worktrees_dir: Path | None = None
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES
    config_file: str | None = None

    def default_for(self, workspace: str) -> str | None:
        return self.workspace_defaults.get(workspace)


def load_repositories(config_file: str | None, home: Path) -> RepositorySettings:
    """Read the repository tables; `home` is CLARION_HOME (the default worktrees_dir's parent)."""
    if not config_file:
        return RepositorySettings(worktrees_dir=home / "worktrees")
    path = Path(config_file)
    data = read_config(path)
    repositories = _repositories(data.get("repositories", {}), path)
    defaults = _workspace_defaults(data.get("workspaces", {}), path, repositories)
    return RepositorySettings(
        repositories=repositories,
        workspace_defaults=defaults,
        worktrees_dir=_worktrees_dir(data.get("worktrees_dir"), path, home),
        max_patch_bytes=_max_patch_bytes(data.get("max_patch_bytes"), path),
        config_file=str(path),
    )


def _repositories(raw: Any, path: Path) -> dict[str, Repository]:
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: [repositories] must be a table")
    repositories: dict[str, Repository] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            raise ValueError(f"{path}: [repositories.{name}] must be a table")
        unknown = sorted(set(spec) - {"path", "base"})
        if unknown:
            raise ValueError(f"{path}: repositories.{name}.{unknown[0]}: unknown key")
        where = f"{path}: repositories.{name}.path"
        location = spec.get("path")
        if not isinstance(location, str) or not location.strip():
            raise ValueError(f"{where} must be an absolute path to a git repository")
        if not Path(location).is_absolute():
            raise ValueError(f"{where} must be an absolute path, got {location!r}")
        base = spec.get("base")
        if base is not None and (not isinstance(base, str) or not base.strip()):
            raise ValueError(f"{path}: repositories.{name}.base must be a branch name")
        repositories[name] = Repository(name=name, path=Path(location), base=base)
    return repositories


def _workspace_defaults(
    raw: Any, path: Path, repositories: Mapping[str, Repository]
) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}  # the waiting-policy reader names this error
    defaults: dict[str, str] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict) or "repository" not in spec:
            continue
        repository = spec["repository"]
        if not isinstance(repository, str) or repository not in repositories:
            known = ", ".join(sorted(repositories)) or "none"
            raise ValueError(
                f"{path}: workspaces.{name}.repository: unknown repository {repository!r};"
                f" [repositories] defines: {known}"
            )
        defaults[name] = repository
    return defaults


def _worktrees_dir(raw: Any, path: Path, home: Path) -> Path:
    if raw is None:
        return home / "worktrees"
    if not isinstance(raw, str) or not raw.strip() or not Path(raw).is_absolute():
        raise ValueError(f"{path}: worktrees_dir must be an absolute path")
    return Path(raw)


def _max_patch_bytes(raw: Any, path: Path) -> int:
    if raw is None:
        return DEFAULT_MAX_PATCH_BYTES
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        raise ValueError(f"{path}: max_patch_bytes must be a positive integer")
    return raw
