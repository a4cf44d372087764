"""The real ASGI application served by uvicorn inside the test's event loop, on the services of
an in-process lifecycle (tests/lifecycle/harness.py): real HTTP and WebSocket, with fault points
and store wrappers that can change while it runs. A separate `clarion serve` process is used
where a restart or the process boundary matters (test_http_server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn
from websockets.asyncio.client import ClientConnection

from clarion.api.app import create_app
from tests.lifecycle.harness import Lifecycle

RECEIVE_S = 5.0


CEILING_S = 60.0  # a ceiling for waits, never a delay


@contextlib.asynccontextmanager
async def serving(life: Lifecycle) -> AsyncIterator[str]:
    """Serves `life`'s application on a free loopback port; yields the `/api/v1` base URL."""
    config = uvicorn.Config(
        create_app(life.app.services, life.app.mcp),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(CEILING_S):
            while not server.started:
                if task.done():
                    await task
                    raise AssertionError("uvicorn stopped before it started")
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}/api/v1"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def receive_until(
    ws: ClientConnection, predicate: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The first envelope matching `predicate`, within a bounded wait."""
    async with asyncio.timeout(RECEIVE_S):
        while True:
            message = json.loads(await ws.recv())
            if predicate(message):
                return dict(message)
