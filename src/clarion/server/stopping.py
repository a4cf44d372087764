"""One graceful stop for SIGTERM and SIGINT.

uvicorn handles both signals itself while it serves, and once `serve()` returns it restores
the previous handlers and raises the captured signal again. For SIGTERM the previous handler
is the default one, which ends the process on the spot: before the agents were stopped, the
spans flushed or a replica's clean leave written. So the server takes both signals itself for
its whole life (`installed`), tells uvicorn to stop admitting (`then`), and lets the server's
own shutdown run to its end; the process then exits 0. A second signal while it stops means
"now": the process exits at once with 128 + the signal's number, as a shell reports a
signal's death (its agents go with it: see clarion.agents.process).

Imported by `clarion.server.serving` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class GracefulStop:
    """Whether a stop was asked for, and what to do when it is."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None
        self._then: list[Callable[[signal.Signals], None]] = []

    @property
    def requested(self) -> bool:
        return self.signal is not None

    def then(self, action: Callable[[signal.Signals], None]) -> None:
        """Run `action` with the signal when a stop is asked for (at once if it already was)."""
        self._then.append(action)
        if self.signal is not None:
            action(self.signal)

    @contextlib.contextmanager
    def installed(self, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
        """Take SIGTERM and SIGINT on `loop` until exit. Only the main thread receives
        signals; elsewhere (a server run inside tests) nothing is installed."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self.received, sig)
        try:
            yield
        finally:
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)

    def received(self, sig: signal.Signals) -> None:
        if self.signal is not None:
            log.warning(
                "second signal while stopping: exiting at once",
                extra={"signal": sig.name, "exit_status": 128 + sig.value},
            )
            logging.shutdown()
            os._exit(128 + sig.value)
        self.signal = sig
        log.info("stopping gracefully", extra={"signal": sig.name})
        for action in self._then:
            action(sig)
