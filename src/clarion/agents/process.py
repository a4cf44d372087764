"""Agent subprocesses: environment, spawn, stderr drain, bounded shutdown.

Imported by `clarion.agents.runtime` and `clarion.agents.live` only. Agents run in their own
process group so that stopping one also stops what it spawned (npx, node, ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Mapping, Sequence

logger = logging.getLogger(__name__)

# What an agent needs from our environment to run at all; everything else (API keys...) must be
# given by the runtime's base_env or the profile's env.
BASE_ENV_KEYS = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    # Coverage measurement hands its configuration down in these (set only in `make test`).
    "COVERAGE_PROCESS_CONFIG",
    "COVERAGE_PROCESS_START",
    "TMPDIR",
)

# Lines are bounded when logged; the StreamReader limit is far above any sane log line.
STDOUT_LIMIT_BYTES = 50 * 1024 * 1024
_STDERR_CHUNK = 64 * 1024
_MAX_LOG_LINE = 4096


def build_env(
    profile_env: Mapping[str, str],
    base_env: Mapping[str, str] | None,
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A sane base from `parent` (default os.environ), then `base_env`, then the profile's env."""
    parent = os.environ if parent is None else parent
    env = {k: parent[k] for k in BASE_ENV_KEYS if k in parent}
    env.update(base_env or {})
    env.update(profile_env)
    return env


async def spawn(
    command: Sequence[str], env: Mapping[str, str], cwd: str
) -> asyncio.subprocess.Process:
    """Start `command` with piped stdio. Raises OSError if it cannot be started."""
    return await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        limit=STDOUT_LIMIT_BYTES,
        start_new_session=True,
    )


async def drain_stderr(stream: asyncio.StreamReader, session_id: str, tail: deque[str]) -> None:
    """Read stderr until EOF so the agent never blocks on a full pipe; log lines at DEBUG and
    keep the last few in `tail` for error messages."""
    pending = b""
    while True:
        chunk = await stream.read(_STDERR_CHUNK)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        if len(pending) > _MAX_LOG_LINE:
            lines.append(pending)
            pending = b""
        for raw in lines:
            _record(raw, session_id, tail)
    if pending:
        _record(pending, session_id, tail)


def _record(raw: bytes, session_id: str, tail: deque[str]) -> None:
    line = raw[:_MAX_LOG_LINE].decode("utf-8", "replace").rstrip()
    if not line:
        return
    tail.append(line)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("agent stderr: %s", line, extra={"session_id": session_id})


def _signal_group(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        try:
            os.killpg(proc.pid, sig)
        except PermissionError:
            proc.send_signal(sig)


async def shut_down(proc: asyncio.subprocess.Process, grace: float) -> int:
    """Close stdin, wait `grace` for a clean exit, then SIGTERM, then SIGKILL. Returns the code."""
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            _signal_group(proc, sig)
        try:
            return await asyncio.wait_for(proc.wait(), timeout=grace)
        except TimeoutError:
            continue
    return await proc.wait()
