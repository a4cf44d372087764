"""An event loop on a thread of its own, for work that must not queue behind the server's.

A cluster replica's heartbeat proves that it still holds its locks; on the server's event loop
it waits behind whatever else is ready there, and on a starved machine every step of that work
takes several times its CPU, so a heartbeat can lag by seconds and the replica fence itself
although nothing failed. On a loop of its own the heartbeat needs only its thread scheduled and
the interpreter lock, which the server's thread yields every few milliseconds.

Imported by the store's cluster membership only.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class OwnLoop:
    """A running event loop on a daemon thread; `run` awaits a coroutine run there."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on this loop and wait for it from the caller's; cancelling the caller
        cancels `work`."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    async def close(self) -> None:
        """Cancel what still runs there, then stop the loop and its thread."""
        await self.run(_cancel_the_rest())
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join)
        self._loop.close()


async def _cancel_the_rest() -> None:
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
