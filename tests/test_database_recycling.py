"""The test databases' recycling (tests/conftest.py): a PostgreSQL database handed back is
emptied of rows and kept migrated only when asked for and only when its schema is exactly the
latest; anything else is dropped to nothing, as a new database would be."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from clarion.runtime.clock import SystemClock
from clarion.store.db.migrations import LATEST_VERSION
from tests.conftest import _pg_connect_kwargs, fresh_database_url
from tests.whole_store import open_whole_store

pytestmark = pytest.mark.postgres


def _tables(url: str) -> set[str]:
    async def read() -> set[str]:
        conn = await asyncpg.connect(**_pg_connect_kwargs(url))
        try:
            rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            return {r["tablename"] for r in rows}
        finally:
            await conn.close()

    return asyncio.run(read())


def _migrate_and_write(url: str) -> None:
    async def run() -> None:
        async with open_whole_store(url, SystemClock()) as store:
            await store.ensure_workspace("recycled")

    asyncio.run(run())


def _execute(url: str, statement: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(**_pg_connect_kwargs(url))
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


def _count(url: str, table: str) -> int:
    async def run() -> int:
        conn = await asyncpg.connect(**_pg_connect_kwargs(url))
        try:
            return int(await conn.fetchval(f'SELECT count(*) FROM "{table}"'))
        finally:
            await conn.close()

    return asyncio.run(run())


def test_a_migrated_database_comes_back_migrated_and_empty_only_when_asked(
    tmp_path: Path,
) -> None:
    with fresh_database_url("postgres", tmp_path) as url:
        _migrate_and_write(url)
        migrated = _tables(url)
    with fresh_database_url("postgres", tmp_path, migrated_ok=True) as again:
        assert again == url  # the same database, recycled
        assert _tables(again) == migrated
        assert _count(again, "workspaces") == 0
    with fresh_database_url("postgres", tmp_path) as plain:
        assert plain == url
        assert _tables(plain) == set()


def test_a_database_whose_schema_is_not_the_latest_is_dropped_even_when_migrated_is_ok(
    tmp_path: Path,
) -> None:
    with fresh_database_url("postgres", tmp_path) as url:
        _migrate_and_write(url)
        _execute(url, f"DELETE FROM clarion_schema_version WHERE version = {LATEST_VERSION}")
    with fresh_database_url("postgres", tmp_path, migrated_ok=True) as again:
        assert again == url
        assert _tables(again) == set()
    with fresh_database_url("postgres", tmp_path) as url:
        _migrate_and_write(url)
        _execute(url, "CREATE TABLE stray (x int)")
    with fresh_database_url("postgres", tmp_path, migrated_ok=True) as again:
        assert _tables(again) == set()
