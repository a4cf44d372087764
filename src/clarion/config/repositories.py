"""`[repositories.NAME]`, `[workspaces.NAME] repository`, `worktrees_dir` and `max_patch_bytes`
from the config file (docs/workspaces.md).

Built from the one parse of the file (`clarion.config.document`), whose models check the
shape (a bad value raises ValueError naming the file and the key); whether a path is a git
repository and its base exists is asked of git by `clarion.workspaces.checks` when `clarion
serve` starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clarion.config.load import read_document

if TYPE_CHECKING:
    from clarion.config.document import ConfigDocument

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


def repository_settings(
    document: ConfigDocument, config_file: str | None, home: Path
) -> RepositorySettings:
    """The repository tables; `home` is CLARION_HOME (the default worktrees_dir's parent)."""
    if not config_file:
        return RepositorySettings(worktrees_dir=home / "worktrees")
    return RepositorySettings(
        repositories={
            name: Repository(name=name, path=Path(spec.path), base=spec.base)
            for name, spec in document.repositories.items()
        },
        workspace_defaults={
            name: ws.repository
            for name, ws in document.workspaces.items()
            if ws.repository is not None
        },
        worktrees_dir=Path(document.worktrees_dir or home / "worktrees"),
        max_patch_bytes=document.max_patch_bytes or DEFAULT_MAX_PATCH_BYTES,
        config_file=str(Path(config_file)),
    )


def load_repositories(config_file: str | None, home: Path) -> RepositorySettings:
    return repository_settings(read_document(config_file, os.environ), config_file, home)
