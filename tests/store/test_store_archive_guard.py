"""Store contract: archive's guard reads the rows, on both databases. A question or permission
request waiting refuses it (`pending_input`), an open turn of any session of the task refuses it
(`session_busy`), nothing written either way; otherwise the worktree's row is `removed` in the
same transaction. The rows decide, so another replica's session counts like this one's."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, text

from clarion.domain.errors import PendingInput, SessionBusy
from clarion.domain.ids import new_id
from clarion.domain.models import Session, SessionState, Worktree, WorktreeState
from clarion.store.db.engine import SESSION_KEY_PREFIX
from clarion.store.db.owner_fence import OwnerFence
from clarion.store.db.schema import task_session_turns

from .conftest import World, until_a_backend_waits_on_a_lock
from .test_store_permissions import _request


async def _task_with_worktree(world: World) -> Session:
    session = await world.session()
    path = f"/srv/worktrees/{session.task_id}"
    await world.store.claim_worktree(
        session.task_id, Worktree(path, f"clarion/{session.task_id}", "main", WorktreeState.READY)
    )
    return session


async def _state(world: World, session: Session) -> WorktreeState | None:
    worktree = (await world.store.get_task(session.task_id)).worktree
    return None if worktree is None else worktree.state


async def test_a_task_with_nothing_open_has_its_worktree_row_removed(world: World) -> None:
    session = await _task_with_worktree(world)
    turn = await world.turn(session)
    await world.store.complete_turn(turn.id)
    task = await world.store.claim_archive(session.task_id)
    assert task.worktree is not None and task.worktree.state is WorktreeState.REMOVED
    again = await world.store.claim_archive(session.task_id)  # already removed: as it is
    assert again.worktree == task.worktree


async def test_an_open_turn_of_another_replicas_session_refuses_and_writes_nothing(
    world: World, store_url: str
) -> None:
    session = await _task_with_worktree(world)
    other = await world.session(task_id=session.task_id)
    await world.turn(other)
    await world.own(other.id, "replica-b")
    lost: list[str] = []
    if store_url.startswith("postgresql"):
        # This store is replica A's: the guard only reads B's session, so the fence stays quiet.
        world.store.own_sessions(OwnerFence("replica-a", lost.append))
    with pytest.raises(SessionBusy) as refused:
        await world.store.claim_archive(session.task_id)
    assert refused.value.ids["session_id"] == other.id
    assert lost == []
    assert await _state(world, session) is WorktreeState.READY


async def test_a_waiting_question_refuses_with_pending_input(world: World) -> None:
    session = await _task_with_worktree(world)
    await world.turn(session)
    await world.bundle(session)
    with pytest.raises(PendingInput):
        await world.store.claim_archive(session.task_id)
    assert await _state(world, session) is WorktreeState.READY


async def test_a_waiting_permission_request_refuses_with_pending_input(world: World) -> None:
    session = await _task_with_worktree(world)
    await world.turn(session)
    await world.store.add_permission_request(
        _request(session), session_state=SessionState.WAITING_FOR_INPUT
    )
    with pytest.raises(PendingInput):
        await world.store.claim_archive(session.task_id)
    assert await _state(world, session) is WorktreeState.READY


@pytest.mark.parametrize(
    "db_kind", [pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]
)
async def test_a_turn_committing_while_the_archive_waits_for_its_session_refuses_it(
    world: World,
) -> None:
    # A prompt's write holds the session's key; the archive waits for it, then sees its turn.
    session = await _task_with_worktree(world)
    now = datetime.now(UTC)
    async with world.store.engine.begin() as conn:
        await conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": SESSION_KEY_PREFIX + session.id},
        )
        await conn.execute(
            insert(task_session_turns).values(
                id=new_id(),
                task_session_id=session.id,
                task_id=session.task_id,
                started_at=now,
                metadata={},
                created_at=now,
                updated_at=now,
            )
        )
        archive = asyncio.create_task(world.store.claim_archive(session.task_id))
        await until_a_backend_waits_on_a_lock(world.store)
        assert not archive.done()
    with pytest.raises(SessionBusy):
        await archive
    assert await _state(world, session) is WorktreeState.READY
