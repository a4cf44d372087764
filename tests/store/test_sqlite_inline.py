"""SQLite's inline transactions: automatic checkpoints off, passive ones on a worker thread;
connections reused; BEGIN's failure raised as SQLAlchemy's exception."""

from __future__ import annotations

import asyncio
import sqlite3 as stdlib_sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from clarion.store.db import sqlite
from clarion.store.db.sqlite import CHECKPOINT_EVERY, InlineSqlite


def _inline(tmp_path: Path) -> InlineSqlite:
    return InlineSqlite(make_url(f"sqlite:///{tmp_path / 'inline.db'}"))


async def test_inline_connections_leave_checkpoints_to_the_worker(tmp_path: Path) -> None:
    db = _inline(tmp_path)
    try:
        async with db.read() as tx:
            assert (await tx.execute(text("PRAGMA wal_autocheckpoint"))).scalar() == 0
            assert (await tx.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
    finally:
        db.close()


async def test_a_round_of_passive_checkpoints_follows_every_batch_of_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _inline(tmp_path)
    threads: list[str] = []
    checkpointed = threading.Event()
    original = sqlite._Checkpointer._checkpoint

    def spy(self: sqlite._Checkpointer) -> None:
        threads.append(threading.current_thread().name)
        original(self)
        checkpointed.set()

    monkeypatch.setattr(sqlite._Checkpointer, "_checkpoint", spy)
    try:
        async with db.write() as tx:
            await tx.execute(text("CREATE TABLE scratch (x INTEGER)"))
        for i in range(CHECKPOINT_EVERY - 2):
            async with db.write() as tx:
                await tx.execute(text("INSERT INTO scratch (x) VALUES (:x)"), {"x": i})
        assert not checkpointed.is_set() and db.checkpoints == 0
        async with db.write() as tx:
            await tx.execute(text("INSERT INTO scratch (x) VALUES (-1)"))

        assert await asyncio.to_thread(checkpointed.wait, 10)
        assert await db.checkpoints_settled() == 1
        assert threads == ["clarion-wal-checkpoint_0"] * 2  # the bulk, then the catch-up
        async with db.read() as tx:
            count = (await tx.execute(text("SELECT count(*) FROM scratch"))).scalar()
        assert count == CHECKPOINT_EVERY - 1
    finally:
        db.close()


def _wal_restarts(wal: Path) -> int:
    """The WAL header's checkpoint sequence number: one more each time a writer starts the log
    again from its beginning."""
    return int.from_bytes(wal.read_bytes()[12:16], "big")


async def test_writes_that_never_pause_still_restart_the_wal_from_its_beginning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkpoint beside writes that never pause ends behind the newest commit, and the log
    # restarts only when it was fully copied: the WAL file grew by every write, without end.
    monkeypatch.setattr(sqlite, "CHECKPOINT_EVERY", 20)
    db = _inline(tmp_path)
    wal = tmp_path / "inline.db-wal"
    try:
        async with db.write() as tx:
            await tx.execute(text("CREATE TABLE scratch (x TEXT)"))
        before = _wal_restarts(wal)
        for _ in range(100_000):  # a ceiling; rounds end long before
            async with db.write() as tx:
                await tx.execute(text("INSERT INTO scratch (x) VALUES (:x)"), {"x": "x" * 2000})
            await asyncio.sleep(0)  # the server's loop serves other work between writes
            if db.checkpoints >= 3:
                break
        async with db.write() as tx:
            await tx.execute(text("INSERT INTO scratch (x) VALUES ('after')"))
        assert db.checkpoints >= 3
        assert _wal_restarts(wal) > before
    finally:
        db.close()


async def test_reads_and_writes_reuse_their_connections(tmp_path: Path) -> None:
    db = _inline(tmp_path)
    try:
        seen = set()
        for _ in range(5):
            async with db.read() as tx:
                seen.add((await tx.execute(text("SELECT 1"))).scalar())
        async with db.write() as tx:
            await tx.execute(text("CREATE TABLE t (x INTEGER)"))
        async with db.read() as first:
            pass
        async with db.read() as second:
            pass
        assert first._conn is second._conn
        assert seen == {1}
    finally:
        db.close()


async def test_a_begin_that_outwaits_the_busy_timeout_raises_sqlalchemys_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BEGIN runs on the driver connection itself; its failure is still SQLAlchemy's."""
    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 50)
    db = _inline(tmp_path)
    other = stdlib_sqlite3.connect(tmp_path / "inline.db", isolation_level=None)
    try:
        async with db.write() as tx:
            await tx.execute(text("CREATE TABLE t (x INTEGER)"))
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(OperationalError, match="locked"):
            async with db.write():
                pass
        other.execute("ROLLBACK")
        async with db.write() as tx:
            await tx.execute(text("INSERT INTO t (x) VALUES (1)"))
        async with db.read() as tx:
            assert (await tx.execute(text("SELECT count(*) FROM t"))).scalar() == 1
    finally:
        other.close()
        db.close()
