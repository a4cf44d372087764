"""The git seam: how services make, check and remove task worktrees (implemented by
`clarion.workspaces.worktrees.GitWorktrees` on the git program)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class RepositoryRef:
    """A configured repository: its checkout and the branch task branches start from."""

    name: str
    path: Path
    base: str


class WorktreeGit(Protocol):
    async def materialize(self, repository: Path, directory: Path, branch: str, base: str) -> None:
        """Leave a complete worktree of `branch` at `directory`: one already complete is kept;
        a half-made one (directory without worktree, worktree still initializing) is
        removed; the branch is reused when it exists (its commits stay) and made from `base`
        when it does not. Raises GitError when git fails."""
        ...

    async def is_complete(self, repository: Path, directory: Path, branch: str) -> bool:
        """Whether `directory` is a registered, complete worktree of `branch`."""
        ...

    async def remove(self, repository: Path, directory: Path) -> None:
        """Remove the worktree (its uncommitted changes too); the branch is kept."""
        ...

    async def prune(self, repository: Path) -> None:
        """`git worktree prune`: forget worktrees whose directory vanished."""
        ...

    async def listed(self, repository: Path) -> Mapping[Path, str | None]:
        """`git worktree list --porcelain`: each worktree's directory and its branch."""
        ...
