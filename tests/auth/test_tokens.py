"""Users, memberships and API tokens: the store methods, migration 2 and `clarion token create`."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Connection, insert, inspect, select

from clarion.runtime.clock import ManualClock
from clarion.store import migrate, open_engine
from clarion.store.db.migrations import MIGRATIONS, schema_version
from clarion.store.db.schema import api_tokens, workspaces
from tests import forkserver
from tests.auth.conftest import create_token
from tests.whole_store import open_whole_store


def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))


async def test_issuing_tokens_creates_user_workspace_and_one_membership(store_url: str) -> None:
    manual = clock()
    async with open_whole_store(store_url, manual) as store:
        existing = await store.ensure_workspace("beta")
        first = await store.issue_api_token(user="alice", workspace="alpha", token_hash="a" * 64)
        manual.advance(1)
        second = await store.issue_api_token(user="alice", workspace="beta", token_hash="b" * 64)
        manual.advance(1)
        again = await store.issue_api_token(user="alice", workspace="alpha", token_hash="c" * 64)

        assert [w.name for w in first.workspaces] == ["alpha"]
        assert [w.name for w in again.workspaces] == ["alpha", "beta"]  # oldest membership first
        assert second.workspaces[1] == existing  # an existing workspace is joined, not copied
        assert first.user_id == second.user_id == again.user_id
        for token_hash in ("a" * 64, "b" * 64, "c" * 64):
            owner = await store.find_token_owner(token_hash)
            assert owner is not None and owner.user_name == "alice"
            assert owner.workspaces == again.workspaces
        assert await store.find_token_owner("d" * 64) is None


async def test_users_do_not_share_memberships(store_url: str) -> None:
    async with open_whole_store(store_url, clock()) as store:
        await store.issue_api_token(user="alice", workspace="alpha", token_hash="a" * 64)
        bob = await store.issue_api_token(user="bob", workspace="beta", token_hash="b" * 64)
        assert [w.name for w in bob.workspaces] == ["beta"]


async def test_migration_two_adds_the_access_tables_to_a_version_one_database(
    db_url: str,
) -> None:
    engine = open_engine(db_url)
    try:

        def version_one(conn: Connection) -> None:
            schema_version.create(conn)
            MIGRATIONS[0](conn)
            conn.execute(insert(schema_version).values(version=1, applied_at=datetime.now(UTC)))
            conn.execute(
                insert(workspaces).values(id="w1", name="kept", created_at=datetime.now(UTC))
            )

        async with engine.begin() as conn:
            await conn.run_sync(version_one)
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
        assert "api_tokens" not in tables

        assert await migrate(engine) >= 2  # later migrations apply too
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
            names = (await conn.execute(select(workspaces.c.name))).scalars().all()
        assert {"users", "workspace_members", "api_tokens"} <= tables
        assert names == ["kept"]
    finally:
        await engine.dispose()


async def test_token_create_prints_one_token_and_stores_only_its_hash(tmp_path: Path) -> None:
    # No --database: the same default as `serve`, $CLARION_HOME/clarion.db; no server running.
    home = tmp_path / "home"
    token = create_token(None, "carol", "gamma", home)
    database = home / "clarion.db"
    assert database.exists()

    engine = open_engine(f"sqlite:///{database}")
    try:
        async with engine.connect() as conn:
            stored = (await conn.execute(select(api_tokens.c.token_hash))).scalars().all()
    finally:
        await engine.dispose()
    assert stored == [hashlib.sha256(token.encode()).hexdigest()]
    for file in home.glob("clarion.db*"):  # the database and its WAL
        assert token.encode() not in file.read_bytes()


def test_token_create_on_an_unreachable_database_names_it_without_its_password(
    tmp_path: Path,
) -> None:
    result = forkserver.run(
        ["token", "create", "--user", "u", "--workspace", "w"],
        cwd=tmp_path,
        timeout=60,
        env={
            "CLARION_HOME": str(tmp_path),
            "PATH": "/usr/bin:/bin",
            "CLARION_DATABASE_URL": "postgresql://clarion:hunter2@127.0.0.1:1/clarion",
        },
    )
    assert result.returncode == 1 and result.stdout == ""
    assert "cannot create a token in postgresql://clarion:***@127.0.0.1:1/clarion" in result.stderr
    assert "hunter2" not in result.stderr
