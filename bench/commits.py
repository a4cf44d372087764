"""Durable commits per respond, counted from the database itself, not estimated.

SQLite: the server runs in WAL mode. Before the answer the benchmark checkpoints the WAL
with `PRAGMA wal_checkpoint(TRUNCATE)` from its own connection (the server is idle, so the
WAL empties), then parses the WAL file and counts commit frames (a frame whose "database
size after commit" field is non-zero and whose salts match the WAL header). Only write
transactions append frames, so this counts exactly the write commits, read transactions
excluded. Counted twice: at the 200, and once the server is quiet again. "At the 200" is
counted inside the server the moment its response starts (`bench.commit_stamp`, on a server of
the count's own): read by the benchmark after the 200 arrived, writes the server makes after
the 200 (the task summary's, the resumed agent's first message) raced the read and counted.

PostgreSQL: `pg_snapshot_xmax(pg_current_snapshot())` read before and after is the next
transaction id to be assigned; only transactions that write are assigned one, and reading it
assigns none. The delta therefore counts write transactions, cluster-wide, so it is only
exact on an otherwise idle PostgreSQL server; the minimum over the repetitions is reported.

Live: `/scenario ask-silent` (the agent sends nothing after the tool returns, so the agent's
own reply adds no commit). Detached: `/scenario ask-timeout t=1`; the "quiet" count also
includes the successor turn's agent reply and completion.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import struct
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from bench.client import (
    ANSWER,
    ASK_SILENT,
    ask_and_wait,
    ask_detaching,
    new_asking_session,
    new_idle_session,
)
from bench.context import Ctx
from bench.latency import wait_detached
from bench.server import BenchServer

SETTLE_S = 0.5
REPEATS = 3
REPO_ROOT = Path(__file__).resolve().parent.parent
# The header `bench.commit_stamp` puts on an answer's 200: commits in the WAL as it started.
STAMP_HEADER = "x-bench-wal-commits"


def _sqlite_path(url: str) -> Path:
    return Path(make_url(url).database or "")


def wal_commits(db_path: Path) -> int:
    """Commit frames in the current WAL generation of `db_path`."""
    wal = db_path.with_name(db_path.name + "-wal")
    try:
        data = wal.read_bytes()
    except FileNotFoundError:
        return 0
    if len(data) < 32:
        return 0
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    commits = 0
    offset = 32
    while offset + 24 + page_size <= len(data):
        header = data[offset : offset + 24]
        if header[8:16] != salts:
            break
        if struct.unpack(">I", header[4:8])[0] != 0:
            commits += 1
        offset += 24 + page_size
    return commits


async def _truncate_wal(db_path: Path) -> None:
    for _ in range(100):
        conn = sqlite3.connect(db_path, timeout=5)
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.close()
        if busy == 0 and wal_commits(db_path) == 0:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("could not empty the WAL; is the server idle?")


class Counter:
    """Counts write commits since `reset()`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = make_url(url).get_backend_name() == "sqlite"
        self._base = 0

    async def _next_xid(self) -> int:
        import asyncpg

        conn = await asyncpg.connect(self.url.replace("postgresql+asyncpg", "postgresql"))
        try:
            return int(
                await conn.fetchval("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
            )
        finally:
            await conn.close()

    async def reset(self) -> None:
        if self.is_sqlite:
            await _truncate_wal(_sqlite_path(self.url))
        else:
            self._base = await self._next_xid()

    async def count(self) -> int:
        if self.is_sqlite:
            return wal_commits(_sqlite_path(self.url))
        return await self._next_xid() - self._base

    async def respond(self, ctx: Ctx, pending_id: str) -> tuple[int, dict[str, Any]]:
        """POST the answer; (commits at its 200, the body). SQLite: the server's stamp."""
        response = await ctx.api.http.post(f"/clarification/{pending_id}/respond", json=ANSWER)
        if response.status_code != 200:
            raise RuntimeError(f"respond {pending_id}: {response.status_code} {response.text}")
        stamp = response.headers.get(STAMP_HEADER)
        if self.is_sqlite and stamp is None:
            raise RuntimeError("SQLite commits at the 200 need a server run by bench.commit_stamp")
        at_200 = int(stamp) if stamp is not None else await self.count()
        return at_200, response.json()


@contextlib.asynccontextmanager
async def counting(ctx: Ctx, workdir: Path) -> AsyncIterator[Ctx]:
    """Where the commits are counted: on SQLite a server of their own on a fresh database,
    run by `bench.commit_stamp` (one more call per request, kept out of the other figures);
    on PostgreSQL `ctx` itself."""
    if make_url(ctx.server.database_url).get_backend_name() != "sqlite":
        yield ctx
        return
    home = workdir / "commits"
    home.mkdir(parents=True, exist_ok=True)
    server = BenchServer(
        f"sqlite:///{home / 'commits.db'}",
        home,
        launcher=[sys.executable, "-m", "bench.commit_stamp"],
        # The server runs in `home`: `bench` is importable from the repository's root only.
        extra_env={
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])
            )
        },
    )
    await server.start()
    try:
        counted = await Ctx.connect(ctx.db, server)
        try:
            yield counted
        finally:
            await counted.close()
    finally:
        server.stop()


async def live(ctx: Ctx) -> tuple[int, int]:
    """(commits at the 200, commits once quiet), minimum over the repetitions."""
    counter = Counter(ctx.server.database_url)
    task_id = await ctx.api.create_task("commits live")
    session_id, pending_id = await new_asking_session(ctx.api, ctx.feed, task_id, ASK_SILENT)
    at_200: list[int] = []
    quiet: list[int] = []
    for i in range(REPEATS):
        if i:
            await ctx.api.ok("POST", f"/task-sessions/{session_id}/cancel")
            await asyncio.sleep(SETTLE_S)
            pending_id = await ask_and_wait(ctx.api, ctx.feed, session_id, ASK_SILENT)
        await asyncio.sleep(SETTLE_S)
        await counter.reset()
        count, _ = await counter.respond(ctx, pending_id)
        at_200.append(count)
        await asyncio.sleep(SETTLE_S)
        quiet.append(await counter.count())
    await ctx.api.ok("POST", f"/task-sessions/{session_id}/finish", json={"state": "completed"})
    return min(at_200), min(quiet)


async def detached(ctx: Ctx) -> tuple[int, int]:
    counter = Counter(ctx.server.database_url)
    task_id = await ctx.api.create_task("commits detached")
    session_id = await new_idle_session(ctx.api, task_id)
    at_200: list[int] = []
    quiet: list[int] = []
    for _ in range(REPEATS):
        pending_id = await ask_detaching(ctx.api, ctx.feed, session_id)
        await wait_detached(ctx, session_id, pending_id)
        await asyncio.sleep(SETTLE_S)
        await counter.reset()
        count, body = await counter.respond(ctx, pending_id)
        if not body.get("resumed"):
            raise RuntimeError(f"detached answer did not resume: {body}")
        at_200.append(count)
        await asyncio.sleep(SETTLE_S * 2)
        quiet.append(await counter.count())
    await ctx.api.ok("POST", f"/task-sessions/{session_id}/finish", json={"state": "completed"})
    return min(at_200), min(quiet)
