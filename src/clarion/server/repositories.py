"""The task worktree service as the configuration asks for it: the configured repositories
(their bases resolved), `worktrees_dir` (default `$CLARION_HOME/worktrees`) and git."""

from __future__ import annotations

import os
from pathlib import Path

from clarion.config import Settings
from clarion.config.settings import clarion_home
from clarion.orchestrator.worktrees import TaskWorktrees
from clarion.ports.store.worktrees import WorktreeStore
from clarion.ports.workspaces import RepositoryRef
from clarion.workspaces.checks import checked_repositories
from clarion.workspaces.worktrees import GitWorktrees


def task_worktrees(settings: Settings, store: WorktreeStore) -> TaskWorktrees:
    config = settings.repositories
    if any(r.base is None for r in config.repositories.values()):
        # `clarion serve` resolved them already; a server built another way does it here.
        config = checked_repositories(config)
    refs = {
        name: RepositoryRef(name=name, path=repo.path, base=repo.base or "")
        for name, repo in config.repositories.items()
    }
    directory = config.worktrees_dir or clarion_home(os.environ) / "worktrees"
    return TaskWorktrees(
        store=store, git=GitWorktrees(), repositories=refs, worktrees_dir=Path(directory)
    )
