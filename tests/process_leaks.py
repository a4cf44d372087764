"""A check after every test: each asyncio subprocess the test started has been reaped and its
transport closed by the time the test's event loop is gone.

A child whose exit its loop never saw outlives the test silently: its transport and `Popen` are
collected later, during whichever test happens to run then, as "unclosed transport" and
"subprocess ... is still running" warnings (errors here) that blame the wrong test. This check
blames the test that started it, and kills and reaps what it leaked so the next test is clean.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from asyncio.base_subprocess import BaseSubprocessTransport
from collections.abc import Iterator
from typing import Any

import pytest

_started: weakref.WeakSet[BaseSubprocessTransport] = weakref.WeakSet()
_original_init = BaseSubprocessTransport.__init__


def _tracking_init(self: BaseSubprocessTransport, *args: Any, **kwargs: Any) -> None:
    _started.add(self)
    _original_init(self, *args, **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    """Record every asyncio subprocess transport from now on (the default event loop's; uvloop
    has its own and runs only in the processes the tests start)."""
    BaseSubprocessTransport.__init__ = _tracking_init  # type: ignore[method-assign]


def leaked() -> list[BaseSubprocessTransport]:
    """Transports still open although their event loop is closed: nothing will ever reap the
    child or close them."""
    found = []
    for transport in list(_started):
        loop: asyncio.AbstractEventLoop | None = getattr(transport, "_loop", None)
        if not transport.is_closing() and (loop is None or loop.is_closed()):
            found.append(transport)
    return found


def release(transport: BaseSubprocessTransport) -> None:
    """Kill and reap the child and close the transport without its (closed) loop."""
    popen = transport.get_extra_info("subprocess")
    if popen is not None:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            popen.kill()
        with contextlib.suppress(ChildProcessError):
            popen.wait(timeout=10)
    # What close() would do, without the loop it needs.
    transport._closed = True
    pipes: dict[int, Any] = transport._pipes
    for protocol in pipes.values():
        pipe = None if protocol is None else protocol.pipe
        if pipe is not None and pipe._pipe is not None:
            pipe._closing = True  # its stream writer checks this as it is collected
            pipe._pipe.close()
            pipe._pipe = None
    _started.discard(transport)


def describe(transport: BaseSubprocessTransport) -> str:
    popen = transport.get_extra_info("subprocess")
    args = getattr(popen, "args", "?")
    return f"pid {transport.get_pid()} ({args!r}), exit status seen: {transport.get_returncode()}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    found = leaked()
    if not found:
        return
    lines = [describe(t) for t in found]
    for transport in found:
        release(transport)
    raise AssertionError(
        f"{item.nodeid} left {len(found)} subprocess(es) its event loop never reaped: "
        + "; ".join(lines)
    )
