"""The PostgreSQL connection pool under a burst of more transactions than it holds.

A connection opened for a burst and closed after it costs the server a connect (several round
trips and the driver's type set-up) and, on the next burst, its statements are prepared again
on a cold cache: a cost that grows with the number of concurrent sessions. The pool keeps every
connection it opens, and a burst beyond it waits for one instead."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event, text

from clarion.store.db.engine import POOL_SIZE, open_engine

pytestmark = pytest.mark.postgres

BURST = 3 * POOL_SIZE


@pytest.fixture
def db_kind() -> str:
    return "postgres"


async def test_a_burst_beyond_the_pool_waits_for_kept_connections_and_none_is_opened_twice(
    store_url: str,
) -> None:
    engine = open_engine(store_url)
    opened: list[object] = []
    closed: list[object] = []
    pool = engine.sync_engine.pool
    event.listen(pool, "connect", lambda conn, record: opened.append(record))
    event.listen(pool, "close", lambda conn, record: closed.append(record))
    in_flight = 0
    most = 0

    async def one_transaction() -> Any:
        nonlocal in_flight, most
        async with engine.begin() as conn:
            in_flight += 1
            most = max(most, in_flight)
            await conn.execute(text("select pg_sleep(0.01)"))
            in_flight -= 1

    try:
        for _ in range(2):
            await asyncio.gather(*(one_transaction() for _ in range(BURST)))
        assert most == POOL_SIZE  # the burst did run that wide, and no wider
        assert len(opened) == POOL_SIZE
        assert closed == []
    finally:
        await engine.dispose()
