"""Store contract: a task's repository and worktree row (claimed once, guarded moves)."""

from __future__ import annotations

import asyncio

from sqlalchemy import inspect, text

from clarion.domain.models import Worktree, WorktreeState
from clarion.runtime.clock import ManualClock
from clarion.store import migrate, open_engine
from clarion.store.db.migrations import MIGRATIONS, _v11_task_worktrees
from tests.whole_store import WholeStore, open_whole_store

from .conftest import World

COLUMNS = ("repository", "worktree_path", "worktree_branch", "worktree_base", "worktree_state")


def _worktree(task_id: str, state: WorktreeState = WorktreeState.CREATING) -> Worktree:
    return Worktree(
        path=f"/srv/worktrees/{task_id}", branch=f"clarion/{task_id}", base="main", state=state
    )


async def _task(store: WholeStore, repository: str | None = "app") -> str:
    workspace = await store.ensure_workspace("default")
    task = await store.create_task(
        title="t", description="", workspace_id=workspace.id, repository=repository
    )
    return task.id


async def test_a_task_keeps_its_repository_and_starts_without_a_worktree(store: WholeStore) -> None:
    task_id = await _task(store)
    task = await store.get_task(task_id)
    assert (task.repository, task.worktree) == ("app", None)
    assert (await store.get_task(await _task(store, None))).repository is None


async def test_two_racing_claims_of_one_task_write_one_worktree(store: WholeStore) -> None:
    task_id = await _task(store)
    claims = await asyncio.gather(
        *(store.claim_worktree(task_id, _worktree(task_id)) for _ in range(4))
    )
    won = [c for c in claims if c is not None]
    assert len(won) == 1
    assert won[0].worktree == _worktree(task_id)
    assert (await store.get_task(task_id)).worktree == _worktree(task_id)


async def test_worktree_state_moves_only_from_the_allowed_states(store: WholeStore) -> None:
    task_id = await _task(store)
    assert (
        await store.set_worktree_state(
            task_id, WorktreeState.READY, allowed_from=[WorktreeState.CREATING]
        )
        is None
    )  # nothing claimed yet: nothing to move
    await store.claim_worktree(task_id, _worktree(task_id))
    ready = await store.set_worktree_state(
        task_id, WorktreeState.READY, allowed_from=[WorktreeState.CREATING]
    )
    assert ready is not None and ready.worktree is not None
    assert ready.worktree.state is WorktreeState.READY
    again = await store.set_worktree_state(
        task_id, WorktreeState.READY, allowed_from=[WorktreeState.CREATING]
    )
    assert again is None
    assert (await store.get_task(task_id)).worktree == _worktree(task_id, WorktreeState.READY)


async def test_a_pruners_move_to_removed_does_not_apply_once_the_task_has_a_session(
    world: World,
) -> None:
    # The task was found without sessions; one began before the pruner's guarded move.
    store = world.store
    task_id = await _task(store)
    await store.claim_worktree(task_id, _worktree(task_id, WorktreeState.READY))
    await world.session(task_id=task_id)
    live = [WorktreeState.CREATING, WorktreeState.READY]
    moved = await store.set_worktree_state(
        task_id, WorktreeState.REMOVED, allowed_from=live, without_sessions=True
    )
    assert moved is None
    assert (await store.get_task(task_id)).worktree == _worktree(task_id, WorktreeState.READY)


async def test_worktree_tasks_lists_by_state_and_by_session(world: World) -> None:
    store = world.store
    creating, ready, removed, plain = [await _task(store) for _ in range(4)]
    for task_id in (creating, ready, removed):
        await store.claim_worktree(task_id, _worktree(task_id))
    await store.set_worktree_state(
        ready, WorktreeState.READY, allowed_from=[WorktreeState.CREATING]
    )
    await store.set_worktree_state(
        removed, WorktreeState.REMOVED, allowed_from=[WorktreeState.CREATING]
    )
    live = [WorktreeState.CREATING, WorktreeState.READY]
    assert {t.id for t in await store.worktree_tasks(live)} == {creating, ready}
    session = await world.session(task_id=ready)
    only = await store.worktree_tasks(live, session_ids=[session.id])
    assert [t.id for t in only] == [ready]
    assert await store.worktree_tasks(live, session_ids=[]) == []
    assert plain not in {t.id for t in await store.worktree_tasks(list(WorktreeState))}


async def test_route_of_task_is_its_primary_session(world: World) -> None:
    store = world.store
    task_id = await _task(store)
    assert await store.route_of_task(task_id) is None
    primary = await world.session(task_id=task_id)
    await store.create_session(task_id=task_id, agent="builtin", is_primary=False)
    route = await store.route_of_task(task_id)
    assert route is not None and route.session_id == primary.id


async def test_the_worktree_migration_adds_the_columns_an_older_database_lacks(
    db_url: str, clock: ManualClock
) -> None:
    engine = open_engine(db_url)
    try:
        # Up to the version before the worktree columns came (later versions may follow it).
        await migrate(engine, upto=MIGRATIONS.index(_v11_task_worktrees))
        async with engine.begin() as conn:
            for name in COLUMNS:
                await conn.execute(text(f"ALTER TABLE tasks DROP COLUMN {name}"))
        await migrate(engine)
        async with engine.connect() as conn:
            names = await conn.run_sync(
                lambda sync: {c["name"] for c in inspect(sync).get_columns("tasks")}
            )
        assert set(COLUMNS) <= names
    finally:
        await engine.dispose()
    async with open_whole_store(db_url, clock) as store:
        task_id = await _task(store)
        assert (await store.get_task(task_id)).repository == "app"
