"""`clarion db status|upgrade [--sql]|backup|prune` and `clarion serve --no-migrate`, on both
databases: a database made by the previous release's schema (the migrations but the last),
its upgrade, its SQL preview, and pruning only what finished long ago."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Table, func, insert, select
from typer.testing import CliRunner

from clarion.cli.app import app
from clarion.domain.models import SessionState
from clarion.runtime.clock import ManualClock
from clarion.store import SqlStore, migrate, open_engine
from clarion.store.db.migrations import LATEST_VERSION
from clarion.store.db.schema import task_session_messages, task_sessions, tasks, webhook_deliveries
from clarion.store.retention import Pruned
from tests import forkserver
from tests.conftest import _run
from tests.whole_store import WholeStore, whole

PREVIOUS = LATEST_VERSION - 1


def db(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["db", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


async def _previous_release(url: str) -> str:
    """The database the previous release left: its migrations only, and a task in it."""
    engine = open_engine(url)
    try:
        await migrate(engine, upto=PREVIOUS)
        store = whole(SqlStore(engine, ManualClock(datetime(2026, 1, 1, tzinfo=UTC))))
        try:
            workspace = await store.ensure_workspace("default")
            task = await store.create_task(title="kept", description="", workspace_id=workspace.id)
        finally:
            store.close()
        return task.id
    finally:
        await engine.dispose()


async def _count(url: str, table: Table) -> int:
    engine = open_engine(url)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(select(func.count()).select_from(table))).scalar() or 0)
    finally:
        await engine.dispose()


def test_an_old_schema_is_reported_previewed_refused_by_no_migrate_then_upgraded(
    db_url: str, tmp_path: Path
) -> None:
    _run(lambda: _previous_release(db_url))

    code, out, _ = db("status", "--database", db_url)
    assert code == 1
    assert (
        f"schema version {PREVIOUS} of {LATEST_VERSION}: pending migrations {LATEST_VERSION}" in out
    )

    code, out, _ = db("upgrade", "--sql", "--database", db_url)
    assert code == 0
    assert out.startswith(f"-- clarion db upgrade: schema version {PREVIOUS}")
    assert "INSERT INTO clarion_schema_version" in out
    assert any(
        line.rstrip().endswith(";") for line in out.splitlines() if not line.startswith("--")
    )
    # The preview changed nothing.
    assert db("status", "--database", db_url)[0] == 1

    refused = forkserver.run(
        ["serve", "--no-migrate", "--port", "0", "--database", db_url],
        env={
            "CLARION_HOME": str(tmp_path / "home"),
            "PATH": "/usr/bin:/bin",
            "CLARION_NO_SAMPLE": "1",
        },
        cwd=tmp_path,
        timeout=120,
    )
    assert refused.returncode == 1, refused.stderr
    assert f"schema is at version {PREVIOUS} and this Clarion needs {LATEST_VERSION}" in (
        refused.stderr
    )
    assert "clarion db upgrade" in refused.stderr
    assert "Traceback" not in refused.stderr

    code, out, _ = db("upgrade", "--database", db_url)
    assert (code, out.strip()) == (
        0,
        f"schema upgraded from version {PREVIOUS} to {LATEST_VERSION}",
    )
    code, out, _ = db("status", "--database", db_url)
    assert (code, out.strip()) == (0, f"schema version {LATEST_VERSION}: up to date")
    assert _run(lambda: _count(db_url, tasks)) == 1  # the old release's data survived
    code, out, _ = db("upgrade", "--sql", "--database", db_url)
    assert code == 0 and "up to date, nothing to run" in out


OLD = datetime(2026, 1, 1, tzinfo=UTC)


async def _world(url: str) -> dict[str, str]:
    """Old finished work, old finished work beside a running session, and recent work."""
    engine = open_engine(url)
    await migrate(engine)
    clock = ManualClock(OLD)
    store = whole(SqlStore(engine, clock))
    ids: dict[str, str] = {}
    try:
        workspace = await store.ensure_workspace("default")
        for name in ("finished", "busy", "recent"):
            task = await store.create_task(title=name, description="", workspace_id=workspace.id)
            if name == "recent":
                clock.advance((datetime.now(UTC) - timedelta(days=1) - clock.now()).total_seconds())
            session = await store.create_session(task_id=task.id, agent="b", is_primary=True)
            turn = await store.create_turn(session.id)
            assert turn.session_id == session.id
            await _say(store, session.id, 3)
            await store.transition_session(session.id, SessionState.COMPLETED)
            ids[name] = session.id
        busy_task = (await store.get_session(ids["busy"])).task_id
        running = await store.create_session(task_id=busy_task, agent="b", is_primary=False)
        ids["running"] = running.id
        async with engine.begin() as conn:
            base = {
                "url": "http://x",
                "event": "e",
                "body": "{}",
                "attempts": 1,
                "next_attempt_at": OLD,
                "created_at": OLD,
                "gave_up_at": None,
            }
            await conn.execute(
                insert(webhook_deliveries),
                [
                    {**base, "id": "old-sent", "delivered_at": OLD},
                    {**base, "id": "open", "delivered_at": None},
                ],
            )
    finally:
        store.close()
        await engine.dispose()
    return ids


async def _say(store: WholeStore, session_id: str, n: int) -> None:
    from clarion.ports import NewMessage

    for i in range(n):
        await store.add_message(
            NewMessage(session_id=session_id, author_type="agent", type="message", content=f"m{i}")
        )


async def _sessions(url: str) -> set[str]:
    engine = open_engine(url)
    try:
        async with engine.connect() as conn:
            return {str(r.id) for r in await conn.execute(select(task_sessions.c.id))}
    finally:
        await engine.dispose()


def test_prune_deletes_only_old_finished_work_of_tasks_with_nothing_alive(db_url: str) -> None:
    ids = _run(lambda: _world(db_url))
    before = _run(lambda: _count(db_url, task_session_messages))

    code, out, err = db("prune", "--older-than", "90d", "--dry-run", "--database", db_url)
    assert code == 0, err
    assert out.startswith("would delete 1 sessions, 1 turns, 3 messages, 1 webhook deliveries")
    assert _run(lambda: _count(db_url, task_session_messages)) == before

    code, out, err = db("prune", "--older-than", "90d", "--database", db_url)
    assert code == 0, err
    assert out.startswith("deleted 1 sessions, 1 turns, 3 messages, 1 webhook deliveries")
    assert "1/1 sessions" in err  # progress
    assert _run(lambda: _sessions(db_url)) == {ids["busy"], ids["running"], ids["recent"]}
    assert _run(lambda: _count(db_url, task_session_messages)) == before - 3
    assert _run(lambda: _count(db_url, webhook_deliveries)) == 1
    assert _run(lambda: _count(db_url, tasks)) == 3  # tasks stay

    again = db("prune", "--older-than", "90d", "--database", db_url)
    assert again[0] == 0 and again[1].startswith("deleted 0 sessions")


@pytest.mark.parametrize("bad", ["90", "ninety days", "0", "-1d"])
def test_prune_refuses_a_bad_duration_and_touches_nothing(db_url: str, bad: str) -> None:
    code, _, err = db("prune", "--older-than", bad, "--database", db_url)
    assert code == 2
    assert "--older-than" in err


async def _revived_between_listing_and_delete(url: str) -> tuple[list[str], Pruned, set[str]]:
    engine = open_engine(url)
    await migrate(engine)
    store = whole(SqlStore(engine, ManualClock(OLD)))
    try:
        workspace = await store.ensure_workspace("default")
        task = await store.create_task(title="t", description="", workspace_id=workspace.id)
        old = await store.create_session(task_id=task.id, agent="b", is_primary=True)
        await store.transition_session(old.id, SessionState.COMPLETED)
        cutoff = OLD + timedelta(days=1)
        listed = await store.prunable_sessions(cutoff)
        # A new session starts on the task (a person came back to it) before the delete.
        await store.create_session(task_id=task.id, agent="b", is_primary=False)
        pruned = await store.prune_sessions(listed, cutoff)
        async with engine.connect() as conn:
            left = {str(r.id) for r in await conn.execute(select(task_sessions.c.id))}
        return listed, pruned, left
    finally:
        store.close()
        await engine.dispose()


def test_a_task_revived_between_listing_and_delete_is_left_whole(db_url: str) -> None:
    listed, pruned, left = _run(lambda: _revived_between_listing_and_delete(db_url))
    assert len(listed) == 1
    assert pruned.sessions == 0
    assert listed[0] in left


def test_backup_copies_a_sqlite_database_and_points_postgresql_to_pg_dump(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    _run(lambda: _previous_release(url))
    target = tmp_path / "backup.db"
    code, out, err = db("backup", str(target), "--database", url)
    assert code == 0, err
    assert f"to {target}" in out
    with sqlite3.connect(target) as copy:
        assert copy.execute("SELECT title FROM tasks").fetchall() == [("kept",)]
        assert copy.execute("SELECT max(version) FROM clarion_schema_version").fetchone() == (
            PREVIOUS,
        )
    code, _, err = db("backup", str(target), "--database", url)
    assert code == 2 and "exists" in err
    code, _, err = db("backup", str(tmp_path / "pg.dump"), "--database", "postgresql://u@h/d")
    assert code == 2 and "pg_dump" in err


async def _task_with_a_worktree(url: str, repository: Path, worktrees: Path) -> tuple[str, Path]:
    """An old task whose only session finished, with a real worktree on its own branch."""
    from clarion.domain.models import Worktree, WorktreeState
    from tests.workspaces.gitrepo import git

    engine = open_engine(url)
    await migrate(engine)
    store = whole(SqlStore(engine, ManualClock(OLD)))
    try:
        workspace = await store.ensure_workspace("default")
        task = await store.create_task(
            title="t", description="", workspace_id=workspace.id, repository="app"
        )
        path = worktrees / task.id
        git(repository, "worktree", "add", "-q", "-b", f"clarion/{task.id}", str(path), "main")
        await store.claim_worktree(
            task.id, Worktree(str(path), f"clarion/{task.id}", "main", WorktreeState.READY)
        )
        session = await store.create_session(task_id=task.id, agent="b", is_primary=True)
        await store.transition_session(session.id, SessionState.COMPLETED)
        return task.id, path
    finally:
        store.close()
        await engine.dispose()


def test_prune_removes_the_worktree_of_a_task_it_left_without_sessions_and_keeps_its_branch(
    db_url: str, tmp_path: Path
) -> None:
    from tests.workspaces.gitrepo import git, make_repository

    repository = make_repository(tmp_path, {"README.md": "hello\n"})
    task_id, path = _run(lambda: _task_with_a_worktree(db_url, repository, tmp_path / "wt"))
    # The dry run counts the worktree of the task it would leave without sessions.
    code, out, err = db("prune", "--older-than", "90d", "--dry-run", "--database", db_url)
    assert code == 0, err
    assert "would remove 1 task worktrees" in out
    assert path.exists()
    code, out, err = db("prune", "--older-than", "90d", "--database", db_url)
    assert code == 0, err
    assert "removed 1 task worktrees" in out
    assert not path.exists()
    assert f"clarion/{task_id}" in git(repository, "branch", "--list")
    assert str(path) not in git(repository, "worktree", "list")
    again = db("prune", "--older-than", "90d", "--database", db_url)
    assert again[0] == 0 and "worktrees" not in again[1]
