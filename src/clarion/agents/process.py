"""Agent subprocesses: environment, spawn, stderr drain, bounded shutdown.

Imported by `clarion.agents.runtime` and `clarion.agents.running_agent` only. Agents run in their
own process group so that stopping one also stops what it spawned (npx, node, ...). A guard joins
each group: a shell that reads a pipe from this process and, at end of file, kills its whole group.
End of file comes when the agent has exited (we close the pipe, so what it left behind goes too) or
when this process dies in any way, SIGKILL included: the kernel closes the pipe, so no agent, child
or grandchild, outlives the server that started it.

A sandboxed agent's process is bubblewrap (`clarion.agents.sandbox`): it sits in the group, and
the agent inside, in a process namespace of its own, dies with it (`--die-with-parent`), so the
group's end is the sandbox's end. An agent with limits joins its control group before it runs
(`clarion.agents.limits`); the group is removed once the agent has been reaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import os
import shutil
import signal
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from clarion.agents.limits import AgentGroup, agent_group
from clarion.agents.sandbox import effective_mode, wrap
from clarion.config.sandbox import SandboxConfig

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

# Ignores the signals a stop sends the group, so that it holds the group (and with it the group
# id, which cannot be reused while it has a member) until it is told to end it.
_GUARD = ("sh", "-c", "trap '' TERM INT HUP; read _; kill -KILL 0")
_GUARD_WAIT_S = 5.0
_POLL_S = 0.2
_PIPE_POLL_S = 0.01
_RELEASE_TRIES = 40
_sweepers: dict[int, asyncio.Task[None]] = {}


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
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    sandbox: SandboxConfig | None = None,
) -> asyncio.subprocess.Process:
    """Start `command` with piped stdio in a new process group, guarded (see the module doc),
    in the sandbox and within the limits `sandbox` sets (None: neither). Raises OSError if it
    cannot be started (SandboxUnavailable among them)."""
    argv = tuple(command)
    args_fd: int | None = None
    group: AgentGroup | None = None
    try:
        if sandbox is not None and effective_mode(sandbox) == "bwrap":
            if shutil.which(command[0], path=env.get("PATH")) is None:
                # As an unsandboxed start would fail, not once bubblewrap is running.
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", command[0])
            # bubblewrap reads its options from a memory file: its environment stays off argv.
            args_fd = os.memfd_create("clarion-agent-sandbox", 0)
            wrapped = wrap(command, env, cwd, sandbox, args_fd)
            os.pwrite(args_fd, wrapped.args, 0)
            argv = wrapped.argv
        if sandbox is not None and sandbox.limited:
            group = agent_group(sandbox.pids_max, sandbox.memory_max)
            argv = (*group.prefix(), *argv)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            limit=STDOUT_LIMIT_BYTES,
            pass_fds=() if args_fd is None else (args_fd,),
            **_in_group(0),
        )
    except BaseException:
        if group is not None:
            group.release()
        raise
    finally:
        if args_fd is not None:
            os.close(args_fd)
    try:
        # Same session as the agent's group (a new session could not be joined).
        guard = await asyncio.create_subprocess_exec(
            *_GUARD,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            **_in_group(proc.pid),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        # Only when the agent is already gone (its group with it) or the system is out of
        # processes; a stop still ends the group, just not a SIGKILL of this server.
        logger.warning("agent process group left unguarded: %r", exc, extra={"pid": proc.pid})
        guard = None
    _sweepers[proc.pid] = asyncio.get_running_loop().create_task(
        _sweep_when_done(proc, guard, group), name=f"agent-guard-{proc.pid}"
    )
    return proc


def _in_group(pgid: int) -> dict[str, Any]:
    """Spawn arguments that put the child in process group `pgid` (0: a new one of its own)."""
    if type(asyncio.get_running_loop()).__module__.startswith("uvloop"):
        # uvloop takes no `process_group=`; it forks either way, so a preexec function costs
        # nothing more there.
        return {"preexec_fn": functools.partial(os.setpgid, 0, pgid)}
    # Not a preexec function here: it would make CPython fork the whole server instead of vfork.
    return {"process_group": pgid}


async def _sweep_when_done(
    proc: asyncio.subprocess.Process,
    guard: asyncio.subprocess.Process | None,
    group: AgentGroup | None = None,
) -> None:
    """Once the agent itself has exited, end whatever it left in its group, and reap the guard.

    When an agent exits on its own nobody awaits this task, so it may be cancelled only as its
    event loop closes; it must finish even then. Cancelled, it ends the group at once (the guard
    kills it) and still waits, bounded, until the loop has seen both children exit, then lets the
    cancellation through: a child whose exit its loop never saw leaves a transport that is
    collected later, in whatever runs then, as "subprocess ... is still running".
    """
    cancelled = False
    try:
        await _exited(proc)
    except asyncio.CancelledError:
        cancelled = True
    try:
        if guard is not None:
            if guard.stdin is not None:
                guard.stdin.close()
            cancelled |= await _reap(guard, proc)
        cancelled |= await _reap(proc, proc)
    finally:
        _sweepers.pop(proc.pid, None)
        if group is not None:
            await _release(group)
    if cancelled:
        raise asyncio.CancelledError


async def _release(group: AgentGroup) -> None:
    """Remove the agent's control group; the processes the guard has just killed may take a
    moment to leave it."""
    for _ in range(_RELEASE_TRIES):
        if group.try_release():
            return
        await asyncio.sleep(_PIPE_POLL_S * 5)
    group.release()


async def _reap(child: asyncio.subprocess.Process, agent: asyncio.subprocess.Process) -> bool:
    """Wait until the loop has seen `child` exit and closed its pipes: up to _GUARD_WAIT_S, then
    SIGKILL the agent's group and as long again. A cancellation meanwhile does not cut the wait
    short; returns whether there was one, for the caller to raise once it is done."""
    loop = asyncio.get_running_loop()
    cancelled = False
    for last_try in (False, True):
        deadline = loop.time() + _GUARD_WAIT_S
        while loop.time() < deadline:
            try:
                async with asyncio.timeout_at(deadline):
                    await child.wait()
                    await _pipes_closed(child)
                return cancelled
            except TimeoutError:
                break
            except asyncio.CancelledError:
                cancelled = True
        if not last_try:
            _signal_group(agent, signal.SIGKILL)
    logger.warning("agent process %s not reaped", child.pid, extra={"pid": agent.pid})
    return cancelled


async def _pipes_closed(child: asyncio.subprocess.Process) -> None:
    """Until the loop has read end of file on `child`'s pipes and closed its transport.

    `wait()` returns once the child has exited (Python 3.11), but its stdout and stderr reach end
    of file only when the last holder is gone (a grandchild the guard has just killed): a loop
    that closes in between never reads it, and the open transport is collected later, in
    whatever runs then, as "subprocess ... is still running". The transport is the SDK's own
    attribute; there is no public way to ask whether it closed."""
    transport = getattr(child, "_transport", None)
    while transport is not None and not transport.is_closing():  # noqa: ASYNC110 - no event to wait on
        await asyncio.sleep(_PIPE_POLL_S)


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


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Return once `proc` has exited. Not `proc.wait()`: that also waits for its pipes to close,
    which a child still holding them would put off forever."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here, or already reaped
        while proc.returncode is None:  # noqa: ASYNC110 - nothing to wait on but the status
            await asyncio.sleep(_POLL_S)
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not done.done():
            done.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        if proc.returncode is None:
            await done
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def _signal_group(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        try:
            os.killpg(proc.pid, sig)
        except PermissionError:
            proc.send_signal(sig)


async def shut_down(proc: asyncio.subprocess.Process, grace: float) -> int:
    """Close stdin, wait `grace` for a clean exit, then SIGTERM, then SIGKILL the group; returns
    the code once the agent and everything it started are gone."""
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    code: int | None = None
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            _signal_group(proc, sig)
        try:
            code = await asyncio.wait_for(proc.wait(), timeout=grace)
            break
        except TimeoutError:
            continue
    if code is None:
        code = await proc.wait()
    sweeper = _sweepers.get(proc.pid)
    if sweeper is not None:
        with contextlib.suppress(Exception):
            await asyncio.shield(sweeper)
    return code
