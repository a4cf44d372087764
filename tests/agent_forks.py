"""The built-in agents of the tests' forked servers, forked from the zygote (`tests/zygote.py`)
instead of started: an agent's start is mostly the import of the ACP library's schema (about a
second under coverage), and the end-to-end tests start hundreds.

A forked server starts `python -m clarion.agents.builtin` as always (same profile, guard and
process group), except that `clarion.agents.runtime` runs the shim `tests/agent_shim.py` in its
place: the shim connects to the zygote's agent socket and hands it its stdin, stdout, stderr,
environment, directory and arguments. The zygote forks the agent (a real process of its own,
the real `clarion.agents.builtin` main on those pipes, coverage restarted after the fork) and
reports its exit status to the shim, which exits with it; signals the shim gets go to the agent.
When the shim's connection closes before the agent has exited (the shim was killed, with its
process group, by the server's guard or by a test), the zygote kills the agent: no agent
outlives its shim, as none outlived its server before.

Messages are JSON, one per SOCK_SEQPACKET packet. From the shim: {"argv", "env", "cwd"} with
descriptors 0-2, then {"signal": number} for each signal it forwards. To the shim:
{"exited": pid, "returncode": code}. To the pytest worker (through `report`):
{"agent_started": pid, "shim": pid} and {"agent_exited": pid, "returncode", "cpu"}.
"""

from __future__ import annotations

import asyncio.subprocess
import contextlib
import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from clarion.config.sandbox import SandboxConfig

MODULE = "clarion.agents.builtin"
BUILTIN_COMMAND = (sys.executable, "-m", MODULE)
SHIM = Path(__file__).resolve().parent / "agent_shim.py"
# In a forked server's environment: the zygote's agent socket, when its agents are forked.
SOCKET_ENV = "CLARION_TEST_AGENT_ZYGOTE"
# The shim's first argument after the socket when the agent runs untraced, as its server does.
UNTRACED_FLAG = "--untraced"
_PEER_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid

Report = Callable[[dict[str, Any]], None]
StartChild = Callable[[dict[str, Any], list[int]], NoReturn]


def shim_command(socket_path: str, *, traced: bool = True) -> tuple[str, ...]:
    """What a forked server runs for the built-in agent. `-S` leaves out `site` (and with it
    coverage's start-up hook): the shim costs about ten milliseconds. An untraced server's
    agent is untraced too (tests/untraced.py)."""
    flag = () if traced else (UNTRACED_FLAG,)
    return (sys.executable, "-S", "-I", str(SHIM), socket_path, *flag, "-m", MODULE)


def listen(socket_path: str) -> socket.socket:
    """The agent socket, listening: made by the pytest worker, so that it exists as soon as
    the zygote's process does (shims that connect while the zygote imports wait in its queue)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(socket_path)
    listener.listen(64)
    return listener


def fork_builtin_agents(socket_path: str, *, traced: bool = True) -> None:
    """In a forked server, before it runs: start the built-in agent through the shim."""
    from clarion.agents import process, runtime

    # The runtime's own binding of the name, which it calls for every agent it starts.
    names = vars(runtime)
    launch = process.spawn
    bound_there = names["spawn"] is launch
    if not bound_there:  # the runtime starts agents some other way now: say so
        raise RuntimeError("clarion.agents.runtime no longer starts agents through spawn()")
    shim = shim_command(socket_path, traced=traced)

    async def spawn(
        command: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        sandbox: SandboxConfig | None = None,
    ) -> asyncio.subprocess.Process:
        if tuple(command) != BUILTIN_COMMAND:
            return await launch(command, env, cwd, sandbox)
        # Unsandboxed: the agent the zygote forks runs outside any sandbox anyway, and the
        # zygote knows a shim by its pid (a sandboxed one's is not the process's). The tests
        # of the sandbox itself start their agents for real (CLARION_TEST_FORKSERVER=servers).
        return await launch(shim, env, cwd)

    names["spawn"] = spawn


@dataclass(slots=True)
class _Agent:
    pid: int
    pidfd: int
    shim: socket.socket | None  # None once the shim's connection has closed


class AgentForks:
    """The zygote's side: a listening socket, the shims' connections, the agents' pidfds."""

    def __init__(self, listener: socket.socket, report: Report, start_child: StartChild) -> None:
        self._listener = listener
        self._report = report
        self._start_child = start_child
        self._waiting: dict[int, socket.socket] = {}  # connected, request not read yet
        self._by_shim: dict[int, _Agent] = {}
        self._by_pidfd: dict[int, _Agent] = {}

    def fds(self) -> list[int]:
        return [self._listener.fileno(), *self._waiting, *self._by_shim, *self._by_pidfd]

    def ready(self, fd: int) -> None:
        """Handle one readable descriptor of `fds()`."""
        if fd == self._listener.fileno():
            conn, _ = self._listener.accept()
            self._waiting[conn.fileno()] = conn
        elif fd in self._waiting:
            self._start(self._waiting.pop(fd))
        elif fd in self._by_shim:
            self._from_shim(self._by_shim[fd])
        else:
            self._exited(self._by_pidfd.pop(fd))

    def _start(self, conn: socket.socket) -> None:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        request = json.loads(data) if data else None
        if request is not None and request["argv"][:1] == [UNTRACED_FLAG]:
            request["argv"], request["traced"] = request["argv"][1:], False
        if request is None or len(fds) != 3 or request["argv"][:2] != ["-m", MODULE]:
            for fd in fds:
                os.close(fd)
            conn.close()  # the shim exits as killed: nothing was started
            return
        request["argv"] = request["argv"][2:]
        pid = os.fork()
        if pid == 0:
            self._start_child(request, fds)
        for fd in fds:
            os.close(fd)
        shim_pid, _, _ = _PEER_CREDENTIALS.unpack(
            conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER_CREDENTIALS.size)
        )
        agent = _Agent(pid=pid, pidfd=os.pidfd_open(pid), shim=conn)
        self._by_shim[conn.fileno()] = agent
        self._by_pidfd[agent.pidfd] = agent
        self._report({"agent_started": pid, "shim": shim_pid})

    def _from_shim(self, agent: _Agent) -> None:
        assert agent.shim is not None
        data = agent.shim.recv(1 << 16)
        if data:
            signal.pidfd_send_signal(agent.pidfd, int(json.loads(data)["signal"]))
            return
        # The shim is gone with the agent still running: it goes too.
        self._drop_shim(agent)
        signal.pidfd_send_signal(agent.pidfd, signal.SIGKILL)

    def _exited(self, agent: _Agent) -> None:
        _, status, usage = os.wait4(agent.pid, 0)
        os.close(agent.pidfd)
        returncode = os.waitstatus_to_exitcode(status)
        if agent.shim is not None:
            with contextlib.suppress(OSError):  # a shim that died meanwhile
                agent.shim.send(
                    json.dumps({"exited": agent.pid, "returncode": returncode}).encode()
                )
            self._drop_shim(agent)
        cpu = usage.ru_utime + usage.ru_stime
        self._report({"agent_exited": agent.pid, "returncode": returncode, "cpu": cpu})

    def _drop_shim(self, agent: _Agent) -> None:
        assert agent.shim is not None
        del self._by_shim[agent.shim.fileno()]
        agent.shim.close()
        agent.shim = None

    def close(self) -> None:
        """The zygote is ending: its agents end with it (their shims then exit as killed)."""
        for agent in self._by_pidfd.values():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(agent.pidfd, signal.SIGKILL)
        self._listener.close()
