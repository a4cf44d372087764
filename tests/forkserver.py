"""`clarion serve` for the tests, forked from a process that has already imported it.

A server start is about nine tenths imports (FastAPI, SQLAlchemy, the ACP library, ...), and
the end-to-end tests start hundreds. Each pytest worker starts one zygote (`tests/zygote.py`)
on its first server; every server after that is a fork of it: still a process of its own, with
its own pid, session, environment, working directory and log, killed with SIGKILL at a fault
point and restarted on the same database exactly as before. `popen` returns the part of
`subprocess.Popen` the harness uses (pid, poll, wait, returncode).

Their built-in agents are forked from the same zygote (`tests/agent_forks.py`).
CLARION_TEST_FORKSERVER=0 starts each server as `python -m clarion serve` instead, and
CLARION_TEST_FORKSERVER=servers forks the servers but lets them start their agents.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests import agent_forks

ROOT = Path(__file__).resolve().parent.parent


def enabled() -> bool:
    return os.environ.get("CLARION_TEST_FORKSERVER", "1") != "0"


def agents_forked() -> bool:
    return os.environ.get("CLARION_TEST_FORKSERVER", "1") not in ("0", "servers")


class ForkedProcess:
    """A child of the zygote, seen from the test: its exit arrives as a message."""

    def __init__(self, pid: int, args: Sequence[str]) -> None:
        self.pid = pid
        self.args = list(args)
        self.returncode: int | None = None
        self.cpu = 0.0  # once it has ended: its user+sys CPU, its reaped children's included
        self._exited = threading.Event()

    def _ended(self, returncode: int, cpu: float = 0.0) -> None:
        self.returncode = returncode
        self.cpu = cpu
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode


class ForkServer:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._directory = tempfile.mkdtemp(prefix="clarion-zygote-")
        self.agent_socket = os.path.join(self._directory, "agents")
        agents = agent_forks.listen(self.agent_socket)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.zygote", str(theirs.fileno()), str(agents.fileno())],
            pass_fds=[theirs.fileno(), agents.fileno()],
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
        )
        theirs.close()
        agents.close()
        self._sock = ours
        self._request = threading.Lock()  # one start in flight: replies come in order
        self._started: queue.Queue[ForkedProcess | None] = queue.Queue()
        self._children: dict[int, ForkedProcess] = {}
        self._pending: list[Sequence[str]] = []
        self._agents: dict[int, ForkedProcess] = {}  # the running forked agents by their shim
        self._agent_started = threading.Condition()
        self.children_cpu = 0.0  # the ended children's CPU, their own reaped children included
        self.own_cpu = 0.0
        threading.Thread(target=self._read, name="forkserver", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                self._started.put(None)
                for child in [*self._children.values(), *self._agents.values()]:
                    child._ended(-9)  # the zygote is gone; its children were orphaned
                return
            message: dict[str, Any] = json.loads(data)
            self.own_cpu = float(message["self_cpu"])
            if "started" in message:
                child = ForkedProcess(int(message["started"]), self._pending.pop(0))
                self._children[child.pid] = child
                self._started.put(child)
                continue
            if "agent_started" in message:
                agent = ForkedProcess(int(message["agent_started"]), agent_forks.BUILTIN_COMMAND)
                with self._agent_started:
                    self._agents[int(message["shim"])] = agent
                    self._agent_started.notify_all()
                continue
            if "agent_exited" in message:
                with self._agent_started:
                    pid = int(message["agent_exited"])
                    shim = next(s for s, agent in self._agents.items() if agent.pid == pid)
                    ended = self._agents.pop(shim)
            else:
                ended = self._children.pop(int(message["exited"]))
            self.children_cpu += float(message["cpu"])
            ended._ended(int(message["returncode"]), float(message["cpu"]))

    def agent(self, shim_pid: int, timeout: float = 60.0) -> ForkedProcess:
        """The running agent forked for the shim `shim_pid`, once the zygote has said so."""
        with self._agent_started:
            if not self._agent_started.wait_for(lambda: shim_pid in self._agents, timeout):
                raise AssertionError(f"no agent was forked for the shim {shim_pid}")
            return self._agents[shim_pid]

    def popen(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        stdin: int,
        stdout: int,
        stderr: int,
        start_new_session: bool,
    ) -> ForkedProcess:
        """`python -m clarion ARGS` as a fork; the descriptors become its stdin, stdout, stderr."""
        if agents_forked():
            env = {**env, agent_forks.SOCKET_ENV: self.agent_socket}
        request: dict[str, Any] = {"argv": list(args), "env": dict(env), "cwd": str(cwd)}
        request["new_session"] = start_new_session
        request["traced"] = _children_traced[0]
        with self._request:
            self._pending.append(args)
            socket.send_fds(self._sock, [json.dumps(request).encode()], [stdin, stdout, stderr])
            child = self._started.get()
        if child is None:
            raise RuntimeError(f"the test fork server exited with {self._process.wait()}")
        return child

    def close(self) -> None:
        """End the zygote (it saves its coverage data); its children are the tests' to stop."""
        self._sock.shutdown(socket.SHUT_RDWR)
        self._process.wait(timeout=60)
        self._sock.close()
        shutil.rmtree(self._directory, ignore_errors=True)


_server: list[ForkServer] = []
# Whether the servers forked from now on (and their built-in agents) run under coverage's
# tracer, when the suite does: set for each test from tests/untraced.py.
_children_traced = [True]


def trace_children(traced: bool) -> None:
    _children_traced[0] = traced


_lock = threading.Lock()


def fork_server() -> ForkServer:
    with _lock:
        if not _server:
            _server.append(ForkServer())
        return _server[0]


def run(
    args: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """`python -m clarion ARGS` to its end, its output captured: forked from the zygote when the
    tests fork (a command's start is then a fork, not an interpreter importing Clarion, ~0.7
    CPU-s), else exec'd."""
    if not enabled():
        return subprocess.run(
            [sys.executable, "-m", "clarion", *args],
            env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    with (
        open(os.devnull, "rb") as devnull,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        child = fork_server().popen(
            args, env=env, cwd=cwd, stdin=devnull.fileno(), stdout=out.fileno(),
            stderr=err.fileno(), start_new_session=True,
        )  # fmt: skip
        try:
            returncode = child.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            raise
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            list(args), returncode, out.read().decode(), err.read().decode()
        )


def reaped_cpu() -> float:
    """The CPU of the servers and agents this process had forked that have ended, plus the
    zygote's own (`tests/cpu_report.py` counts it as a test's reaped children)."""
    return sum(s.children_cpu + s.own_cpu for s in _server)


def shutdown() -> None:
    with _lock:
        while _server:
            _server.pop().close()
