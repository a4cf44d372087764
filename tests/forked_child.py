"""How a fork of the zygote (`tests/zygote.py`) becomes the process `python -m MODULE` would
be: the requested standard streams, environment, working directory and arguments, the module
run as `__main__`, and its end as the interpreter ends a process (threads joined, exit
functions run, streams flushed), so that coverage saves the child's data and its exit status
is the one a fresh interpreter would give.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _finish(code: int, interrupted: bool) -> NoReturn:
    """End the child as the interpreter ends a process: wait for its non-daemon threads, run
    its exit functions (coverage saves there), flush its streams, then exit with `code`."""
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if interrupted:  # an uncaught KeyboardInterrupt ends Python by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _become(request: dict[str, Any], fds: Sequence[int], new_session: bool) -> None:
    if new_session:
        os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    # The zygote's sockets, its other children's pidfds and descriptors: none is the child's.
    os.closerange(3, 1 << 16)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    # Python decided its streams' buffering for the zygote's descriptors 0-2, which now are the
    # child's: decide again as a fresh interpreter would.
    assert isinstance(sys.stdout, io.TextIOWrapper)
    sys.stdout.reconfigure(
        line_buffering=os.isatty(1), write_through=bool(os.environ.get("PYTHONUNBUFFERED"))
    )
    sys.path[0] = os.getcwd()


def stop_measuring(measurement: Any) -> None:
    """Stop `measurement` (this process's coverage, or None) and save nothing of it: no tracer
    slows the process down, and no data file is written at its exit or SIGTERM."""
    if measurement is None:
        return
    measurement.stop()
    measurement.save = lambda: None


def run_module(
    module: str,
    request: dict[str, Any],
    fds: Sequence[int],
    inherited_coverage: Any,
    *,
    new_session: bool,
    before: Callable[[], None] = lambda: None,
    traced: bool = True,
) -> NoReturn:
    """Become `python -m MODULE ARGS` (`request`: "argv" the ARGS, "env", "cwd"; `fds` its
    stdin, stdout and stderr), calling `before` just before the module runs; never returns.
    Untraced (`traced` false), the child stops the measurement coverage restarted in it."""
    code, interrupted = 1, False
    if inherited_coverage is not None:
        # Coverage restarted itself in the fork (patch = "fork") and saves this process's data
        # at exit; its exit and SIGTERM hooks would also save the zygote's pre-fork data again,
        # a second data file per child. That data is the zygote's to save, once.
        inherited_coverage.save = lambda: None
        if not traced:
            stop_measuring(sys.modules["coverage"].Coverage.current())
    try:
        _become(request, fds, new_session)
        before()
        sys.argv = ["-m", *request["argv"]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt:
        traceback.print_exc()
        interrupted = True
    except BaseException:
        traceback.print_exc()
    _finish(code, interrupted)
