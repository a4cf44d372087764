"""A replica's heartbeat against a real membership (clarion/server/replica.py, PostgreSQL): it
goes on while the server's event loop is held by other work, as a starved machine holds it,
instead of lagging behind that work until the replica fences itself."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from clarion.server.replica import Replica
from clarion.store import migrate, open_engine
from clarion.store.db.membership import membership
from tests.conftest import _pg_connect_kwargs, fresh_database_url

pytestmark = pytest.mark.postgres
CEILING_S = 60.0
# Heartbeats every 2 s, fenced after 4 s without one.
TIMEOUT_S = 8.0


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    with fresh_database_url("postgres", tmp_path) as url:
        yield url


def _heartbeats(url: str, replica_id: str) -> int:
    """The row's heartbeat count, read on a thread of its own (the caller's loop is held)."""

    async def read() -> int:
        conn = await asyncpg.connect(**_pg_connect_kwargs(url))
        try:
            count = await conn.fetchval(
                "SELECT heartbeats FROM clarion_replicas WHERE id = $1", replica_id
            )
        finally:
            await conn.close()
        return int(count)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, read()).result()


async def test_heartbeats_go_on_while_the_event_loop_is_held_by_other_work(pg_url: str) -> None:
    engine = open_engine(pg_url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
    async with membership(pg_url, TIMEOUT_S) as member:
        await member.register("http://a")
        replica = Replica(member, lambda: 0)
        fenced: list[str] = []
        stopped = threading.Event()

        def record(reason: str) -> None:  # instead of ending the process
            fenced.append(reason)
            stopped.set()

        replica.stop_fenced = record  # type: ignore[method-assign]
        beating = asyncio.ensure_future(replica.heartbeats())
        try:
            await asyncio.sleep(0)  # the heartbeats start, and the watchdog with them
            # Hold this loop (no await) until three heartbeats have landed, which outlasts the
            # fencing window, or until the replica would have fenced itself.
            deadline = time.monotonic() + CEILING_S
            while _heartbeats(pg_url, replica.replica_id) < 3:
                assert not stopped.wait(0.05), fenced
                assert time.monotonic() < deadline, "no heartbeat while the loop was held"
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
        assert fenced == []
