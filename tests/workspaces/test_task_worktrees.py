"""Task worktrees on a real git repository and a real store (both databases): made once per
task on its own branch, repaired after a kill at each step, removed with the branch kept."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clarion.domain.errors import InjectedFailure
from clarion.domain.models import Session, SessionState, Worktree, WorktreeState
from clarion.orchestrator.worktrees import TaskWorktrees, WorktreeUnavailable
from clarion.ports.workspaces import RepositoryRef
from clarion.runtime import failpoints
from clarion.runtime.clock import ManualClock
from clarion.workspaces.pruning import count_worktrees_pruned_by, remove_orphaned_worktrees
from clarion.workspaces.worktrees import GitWorktrees
from tests.whole_store import WholeStore, open_whole_store

from .gitrepo import commit_all, git, make_repository


def branches(repository: Path) -> list[str]:
    out = git(repository, "for-each-ref", "--format=%(refname:short)", "refs/heads/")
    return sorted(out.split())


def worktree_dirs(repository: Path) -> list[str]:
    out = git(repository, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[WholeStore]:
    async with open_whole_store(store_url, ManualClock(datetime(2026, 3, 1, tzinfo=UTC))) as opened:
        yield opened


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    return make_repository(tmp_path, {f"file{i}.txt": f"line {i}\n" for i in range(3)})


@pytest.fixture
def service(store: WholeStore, repository: Path, tmp_path: Path) -> TaskWorktrees:
    return TaskWorktrees(
        store=store,
        git=GitWorktrees(),
        repositories={"app": RepositoryRef("app", repository, "main")},
        worktrees_dir=tmp_path / "worktrees",
    )


async def _session(store: WholeStore, repository: str | None = "app") -> Session:
    workspace = await store.ensure_workspace("default")
    task = await store.create_task(
        title="t", description="", workspace_id=workspace.id, repository=repository
    )
    return await store.create_session(task_id=task.id, agent="builtin", is_primary=True)


async def _claim_creating(store: WholeStore, service: TaskWorktrees, session: Session) -> Path:
    """The row a kill right after the `creating` commit leaves."""
    path = service_dir(service) / session.task_id
    await store.claim_worktree(
        session.task_id,
        Worktree(str(path), f"clarion/{session.task_id}", "main", WorktreeState.CREATING),
    )
    return path


def service_dir(service: TaskWorktrees) -> Path:
    return service._dir  # the directory the fixture gave it


async def test_the_first_start_makes_a_worktree_on_a_new_branch_from_base(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    session = await _session(store)
    cwd = await service.working_directory(session)
    assert cwd == str(service_dir(service) / session.task_id)
    task = await store.get_task(session.task_id)
    assert task.worktree == Worktree(cwd, f"clarion/{session.task_id}", "main", WorktreeState.READY)
    assert branches(repository) == sorted(["main", f"clarion/{session.task_id}"])
    assert (Path(cwd) / "file2.txt").read_text() == "line 2\n"
    # The next start finds it complete and changes nothing.
    assert await service.working_directory(session) == cwd
    assert len(worktree_dirs(repository)) == 2


async def test_a_task_without_a_repository_keeps_the_profile_cwd(
    store: WholeStore, service: TaskWorktrees
) -> None:
    session = await _session(store, repository=None)
    assert await service.working_directory(session) is None
    assert (await store.get_task(session.task_id)).worktree is None


async def test_two_tasks_get_two_worktrees_and_a_write_in_one_shows_nowhere_else(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    first, second = await _session(store), await _session(store)
    one = Path(await service.working_directory(first) or "")
    two = Path(await service.working_directory(second) or "")
    assert one != two
    (one / "new.txt").write_text("only in the first")
    assert not (two / "new.txt").exists()
    assert not (repository / "new.txt").exists()
    assert git(repository, "status", "--porcelain") == ""
    assert len(branches(repository)) == 3


async def test_a_creating_row_whose_worktree_was_complete_is_marked_ready_at_startup(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    # Killed after `git worktree add`, before the row moved to ready.
    session = await _session(store)
    path = await _claim_creating(store, service, session)
    git(repository, "worktree", "add", "-b", f"clarion/{session.task_id}", str(path), "main")
    assert await service.reconcile() == 1
    task = await store.get_task(session.task_id)
    assert task.worktree is not None and task.worktree.state is WorktreeState.READY
    assert branches(repository).count(f"clarion/{session.task_id}") == 1
    assert len(worktree_dirs(repository)) == 2


async def test_a_branch_without_its_worktree_is_reused_and_keeps_its_commits(
    store: WholeStore, service: TaskWorktrees, repository: Path, tmp_path: Path
) -> None:
    session = await _session(store)
    path = await _claim_creating(store, service, session)
    branch = f"clarion/{session.task_id}"
    # A branch with a commit on it, its worktree gone, and a half-made directory in its place.
    elsewhere = tmp_path / "elsewhere"
    git(repository, "worktree", "add", "-b", branch, str(elsewhere), "main")
    (elsewhere / "work.txt").write_text("committed work")
    commit_all(elsewhere, "work")
    git(repository, "worktree", "remove", str(elsewhere))
    path.mkdir(parents=True)
    (path / "partial").write_text("half")
    assert await service.working_directory(session) == str(path)
    assert (path / "work.txt").read_text() == "committed work"
    assert not (path / "partial").exists()
    assert branches(repository) == sorted(["main", branch])
    assert (await store.get_task(session.task_id)).worktree.state is WorktreeState.READY  # type: ignore[union-attr]


async def test_a_worktree_git_left_initializing_is_made_again(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    # A kill inside `git worktree add`: git's `initializing` lock stays, the checkout is partial.
    session = await _session(store)
    path = await _claim_creating(store, service, session)
    branch = f"clarion/{session.task_id}"
    git(repository, "worktree", "add", "-b", branch, str(path), "main")
    git(repository, "worktree", "lock", "--reason", "initializing", str(path))
    (path / "file1.txt").unlink()
    assert await service.working_directory(session) == str(path)
    assert (path / "file1.txt").exists()
    listed = git(repository, "worktree", "list", "--porcelain")
    assert "locked" not in listed
    assert branches(repository) == sorted(["main", branch])


async def test_a_ready_worktree_whose_directory_vanished_is_made_again_from_its_branch(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    session = await _session(store)
    cwd = Path(await service.working_directory(session) or "")
    (cwd / "kept.txt").write_text("x")
    commit_all(cwd, "kept")
    shutil.rmtree(cwd)
    assert await service.reconcile() == 1
    assert (cwd / "kept.txt").read_text() == "x"
    assert len(branches(repository)) == 2


async def test_a_vanished_repository_fails_the_start_with_the_reason(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    session = await _session(store)
    os.rename(repository, repository.with_name("moved"))
    with pytest.raises(WorktreeUnavailable, match="could not be made"):
        await service.working_directory(session)
    task = await store.get_task(session.task_id)
    assert task.worktree is not None and task.worktree.state is WorktreeState.CREATING


async def test_remove_deletes_the_worktree_and_keeps_the_branch(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    session = await _session(store)
    cwd = Path(await service.working_directory(session) or "")
    (cwd / "dirty.txt").write_text("uncommitted")
    task = await service.remove(session.task_id)
    assert task.worktree is not None and task.worktree.state is WorktreeState.REMOVED
    assert str(cwd) not in worktree_dirs(repository)
    assert not list(cwd.parent.glob(cwd.name))
    assert f"clarion/{session.task_id}" in branches(repository)
    assert len(worktree_dirs(repository)) == 1
    with pytest.raises(WorktreeUnavailable, match="archived"):
        await service.working_directory(session)


def on_disk(path: Path) -> bool:
    return path.exists()


async def _pruned_away(store: WholeStore, service: TaskWorktrees, session: Session) -> Path:
    """A task with a worktree whose only session a prune deleted."""
    cwd = Path(await service.working_directory(session) or "")
    await store.transition_session(session.id, SessionState.COMPLETED)
    await store.prune_sessions([session.id], datetime(2100, 1, 1, tzinfo=UTC))
    return cwd


async def test_startup_removes_the_worktree_of_a_task_a_prune_left_without_sessions(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    # A prune killed after deleting the sessions, before the worktree: never made again.
    session = await _session(store)
    cwd = await _pruned_away(store, service, session)
    (cwd / "kept.txt").write_text("x")
    commit_all(cwd, "kept")
    assert await service.reconcile() == 0
    assert not on_disk(cwd) and str(cwd) not in worktree_dirs(repository)
    task = await store.get_task(session.task_id)
    assert task.worktree is not None and task.worktree.state is WorktreeState.REMOVED
    assert f"clarion/{session.task_id}" in branches(repository)


async def test_a_removal_killed_before_git_is_finished_at_startup_and_keeps_the_branch(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    session = await _session(store)
    cwd = Path(await service.working_directory(session) or "")
    failpoints.configure("worktree.before_remove=error")
    try:
        with pytest.raises(InjectedFailure):
            await service.remove(session.task_id)
    finally:
        failpoints.configure("")
    task = await store.get_task(session.task_id)
    assert task.worktree is not None and task.worktree.state is WorktreeState.REMOVED
    assert on_disk(cwd)  # the row moved first; git did not run
    with pytest.raises(WorktreeUnavailable, match="archived"):
        await service.working_directory(session)
    assert await service.reconcile() == 0
    assert not on_disk(cwd) and str(cwd) not in worktree_dirs(repository)
    assert f"clarion/{session.task_id}" in branches(repository)


async def test_a_pruned_tasks_vanished_worktree_is_not_made_again_at_startup(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    session = await _session(store)
    cwd = await _pruned_away(store, service, session)
    shutil.rmtree(cwd)
    assert await service.reconcile() == 0
    assert not on_disk(cwd)
    assert (await store.get_task(session.task_id)).worktree.state is WorktreeState.REMOVED  # type: ignore[union-attr]


async def test_the_prune_removes_worktrees_of_tasks_without_sessions_once_and_counts_by_cutoff(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    old, recent, alive = await _session(store), await _session(store), await _session(store)
    old_dir = Path(await service.working_directory(old) or "")
    await service.working_directory(recent)
    await service.working_directory(alive)
    await store.transition_session(old.id, SessionState.COMPLETED)
    store._clock.advance(2 * 86400)  # the fixture's ManualClock
    await store.transition_session(recent.id, SessionState.COMPLETED)
    cutoff = datetime(2026, 3, 2, tzinfo=UTC)  # after `old` ended, before `recent` did
    assert await count_worktrees_pruned_by(store, cutoff) == [old.task_id]
    assert on_disk(old_dir)  # counting removes nothing
    await store.prune_sessions([old.id], cutoff)
    assert await remove_orphaned_worktrees(store) == [old.task_id]
    assert await remove_orphaned_worktrees(store) == []
    assert not on_disk(old_dir) and f"clarion/{old.task_id}" in branches(repository)
    assert len(worktree_dirs(repository)) == 3


async def test_an_adopting_replica_finishes_the_removals_of_its_adopted_tasks_only(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    adopted, other = await _session(store), await _session(store)
    dirs = {}
    for session in (adopted, other):
        dirs[session.id] = Path(await service.working_directory(session) or "")
        # An archive killed after its row moved, before git ran.
        await store.set_worktree_state(
            session.task_id, WorktreeState.REMOVED, allowed_from=[WorktreeState.READY]
        )
    assert await service.reconcile([adopted.id]) == 0
    assert not on_disk(dirs[adopted.id]) and str(dirs[adopted.id]) not in worktree_dirs(repository)
    assert on_disk(dirs[other.id])  # another replica's, or the next whole start's
    assert f"clarion/{adopted.task_id}" in branches(repository)


async def test_the_next_prune_pass_finishes_a_removal_a_kill_cut_short(
    store: WholeStore, service: TaskWorktrees, repository: Path
) -> None:
    session = await _session(store)
    cwd = await _pruned_away(store, service, session)
    failpoints.configure("worktree.before_remove=error")
    try:
        with pytest.raises(InjectedFailure):
            await remove_orphaned_worktrees(store)
    finally:
        failpoints.configure("")
    assert on_disk(cwd)
    assert await remove_orphaned_worktrees(store) == [session.task_id]
    assert not on_disk(cwd) and str(cwd) not in worktree_dirs(repository)
    assert await remove_orphaned_worktrees(store) == []
    assert f"clarion/{session.task_id}" in branches(repository)
