"""Every store call finishes despite a cancelled caller: the one wrapper each port's object
binds its calls through, and the set of transactions still running when the store closes.

Used by the port objects (port_calls.py, server_calls.py) and `SqlStore`, which drains it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class InFlight:
    """The store's calls in flight. `after_call` runs once each call's task ended (the
    outbox wakes the deliverer there if the call queued a notification: after the commit,
    never before)."""

    def __init__(self, after_call: Callable[[asyncio.Future[Any]], None]) -> None:
        self._tasks: set[asyncio.Future[Any]] = set()
        self._after_call = after_call

    def shield(
        self, method: Callable[P, Coroutine[Any, Any, T]]
    ) -> Callable[P, Coroutine[Any, Any, T]]:
        """Run the transaction in its own task so that a cancelled caller cannot interrupt it
        halfway: an interrupted SQLite transaction could keep the write lock, and a half-done
        guarded update would leave the caller unsure what applied. The caller still sees its
        cancellation at once. The ParamSpec keeps the method's names, keywords and defaults,
        so mypy checks each port's object against its protocol."""

        @functools.wraps(method)
        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            task = asyncio.ensure_future(method(*args, **kwargs))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(self._after_call)
            return await asyncio.shield(task)

        run.finishes_despite_cancellation = True  # type: ignore[attr-defined]
        return run

    async def drain(self, within: float = 10.0) -> None:
        """Wait for transactions whose callers were cancelled, before the engine closes."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=within)
