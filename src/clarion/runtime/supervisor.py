"""One TaskGroup for every background task of the process, and bounded persistence phases.

Work that must finish even if the HTTP request that started it is cancelled (a respond
sequence, a detach, an expiry) runs as a supervised task; the request only awaits it through
`asyncio.shield`. Each such phase still has a deadline, so a locked database cannot hold a
response or a pause forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class Supervisor:
    def __init__(self) -> None:
        self._group: asyncio.TaskGroup | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> Supervisor:
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for task in list(self._tasks):
            task.cancel()
        group, self._group = self._group, None
        if group is not None:
            # The children are cancelled above; the body's own exception (if any) propagates
            # as itself rather than wrapped in the group's ExceptionGroup.
            await group.__aexit__(None, None, None)

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Future[T]:
        """Run `coro` under the supervisor; the returned future carries its outcome.

        A failure is logged and reaches whoever awaits the future, never the sibling tasks
        (a bare TaskGroup child that raised would cancel them all).
        """
        if self._group is None:
            coro.close()  # refused work is never started, and must not warn as un-awaited
            raise RuntimeError("supervisor is not running")
        outcome: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        outcome.add_done_callback(_mark_retrieved)
        try:
            task = self._group.create_task(_run(coro, outcome, name), name=name)
        except RuntimeError:  # the group is shutting down
            coro.close()
            raise
        # Cancelling the returned future cancels the work itself.
        outcome.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: _settle_unstarted(coro, outcome))
        return outcome

    async def run_shielded(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> T:
        """Run `coro` to completion even if the caller is cancelled; return its result.

        (Shielded from the caller's cancellation; unrelated to a clarification's detach.)"""
        return await asyncio.shield(self.spawn(coro, name=name))


async def _run(coro: Coroutine[Any, Any, T], outcome: asyncio.Future[T], name: str | None) -> None:
    try:
        result = await coro
    except asyncio.CancelledError:
        outcome.cancel()
        raise
    except Exception as exc:
        log.debug("supervised task failed", extra={"task_name": name}, exc_info=True)
        if not outcome.done():
            outcome.set_exception(exc)
    else:
        if not outcome.done():
            outcome.set_result(result)


def _settle_unstarted(coro: Coroutine[Any, Any, Any], outcome: asyncio.Future[Any]) -> None:
    """A task cancelled before its first step never ran `_run`: its work was never awaited
    (close it, so it does not warn) and its outcome never settled (cancel it, so an awaiter
    does not wait forever). For a task that ran, both are already done and this is a no-op."""
    coro.close()
    if not outcome.done():
        outcome.cancel()


def _mark_retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def bounded(awaitable: Awaitable[T], seconds: float) -> T:
    """Await with a deadline; raises TimeoutError when it passes."""
    return await asyncio.wait_for(awaitable, timeout=seconds)
