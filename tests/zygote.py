"""The fork server's process (`python -m tests.zygote FD AGENTS_FD`): imports what `clarion
serve` and the built-in agent run once, then forks a child for each start that
`tests/forkserver.py` asks for over the socket FD, and a built-in agent for each that a forked
server's shim asks for on the listening socket AGENTS_FD (`tests/agent_forks.py`).

A child is a real `clarion` process: its own pid and session, the requested environment,
working directory and standard streams, `python -m clarion ARGS` run in it, and its exit status
(a crash's 137, a signal's negative number) reported back. What it saves is the import: about
nine tenths of a server start's CPU. Under `coverage run` the zygote is measured like any
subprocess, and each child restarts coverage after the fork (pyproject's `patch = ["fork"]`).

Messages are JSON, one per SOCK_SEQPACKET packet. In: {"argv", "env", "cwd", "new_session"}
with the child's stdin, stdout and stderr as three descriptors. Out: {"started": pid} in the
order of the requests, {"exited": pid, "returncode", "cpu"} when a child ends (its user+sys
CPU with the children it reaped, such as a server's agent shims), the forked agents'
{"agent_started"} and {"agent_exited"} (`tests/agent_forks.py`), each with "self_cpu" (the
zygote's own).
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import resource
import select
import socket
import sys
import threading
from typing import Any, NoReturn

from tests import agent_forks, forked_child

# What a server loads up to ready and with its first agent, MCP request and database: the ACP
# library and the MCP SDK are imported lazily by the product, so preloading them here saves
# every server that starts an agent their import, with no change to what the server runs.
PRELOAD = (
    "clarion.cli.app",
    "clarion.server.serving",
    "clarion.store.db.schema_status",
    "clarion.agents.client",
    "clarion.agents.running_agent",
    "clarion.mcp.ask_tool",
    # The config file's models, which the product loads on the first read of the file.
    "clarion.config.document",
    "mcp.server.mcpserver",
    "mcp.server.streamable_http_manager",
    "mcp.server.transport_security",
    "sqlalchemy.dialects.postgresql.asyncpg",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "nats",
    "uvloop",
    # The built-in agent, forked from here for the servers (tests/agent_forks.py): the ACP
    # schema, and the MCP client it loads for a question.
    "clarion.agents.builtin",
    "clarion.agents.mcp_call",
)
# `clarion.cli.app` reads CLARION_LOG_LEVEL and CLARION_LOG_FORMAT for its option defaults when
# it is imported: each child imports it (and the modules naming it) again, under its own
# environment. The command modules it imports stay loaded.
REIMPORTED = ("clarion.__main__", "clarion.cli", "clarion.cli.app")


def preload() -> None:
    gc.disable()  # as `clarion serve` does around its imports
    try:
        for name in PRELOAD:
            importlib.import_module(name)
    finally:
        gc.enable()
    for name in REIMPORTED:
        sys.modules.pop(name, None)
    # What the imports made lives as long as every child: frozen, no collection walks it, and
    # copy-on-write pages stay shared.
    gc.collect()
    gc.freeze()
    if threading.active_count() != 1:
        raise RuntimeError("the zygote must fork from a single thread")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.send(json.dumps({**message, "self_cpu": _cpu()}).encode())


def _zygote_coverage() -> Any:
    """The zygote's own coverage measurement, when it runs under `coverage run`."""
    if "coverage" not in sys.modules:
        return None
    import coverage

    return coverage.Coverage.current()


def _server_child(request: dict[str, Any], fds: list[int], inherited: Any) -> NoReturn:
    """Become `python -m clarion ARGS`, its built-in agents forked when the request says so."""

    traced = bool(request.get("traced", True))

    def before() -> None:
        agent_socket = os.environ.get(agent_forks.SOCKET_ENV)
        if agent_socket:
            agent_forks.fork_builtin_agents(agent_socket, traced=traced)

    forked_child.run_module(
        "clarion",
        request,
        fds,
        inherited,
        new_session=request["new_session"],
        before=before,
        traced=traced,
    )


def _agent_child(request: dict[str, Any], fds: list[int], inherited: Any) -> NoReturn:
    """Become `python -m clarion.agents.builtin`, in a session of its own as a started agent
    is in a process group of its own."""
    sys.modules.pop(agent_forks.MODULE, None)  # run afresh as __main__, as `-m` does
    forked_child.run_module(
        agent_forks.MODULE,
        request,
        fds,
        inherited,
        new_session=True,
        traced=bool(request.get("traced", True)),
    )


def serve(sock: socket.socket, agents_listener: socket.socket) -> None:
    children: dict[int, int] = {}  # pidfd -> pid
    measuring = _zygote_coverage()
    agents = agent_forks.AgentForks(
        agents_listener,
        report=lambda message: _send(sock, message),
        start_child=lambda request, fds: _agent_child(request, fds, measuring),
    )
    try:
        while True:
            readable, _, _ = select.select([sock.fileno(), *children, *agents.fds()], [], [])
            # One descriptor per round: handling one closes descriptors and opens others, whose
            # numbers a stale entry of the same round could name.
            ready = readable[0]
            if ready == sock.fileno():
                data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
                if not data:
                    return  # the pytest worker is done
                pid = os.fork()
                if pid == 0:
                    sock.close()
                    _server_child(json.loads(data), fds, measuring)
                for fd in fds:
                    os.close(fd)
                children[os.pidfd_open(pid)] = pid
                _send(sock, {"started": pid})
            elif ready in children:
                pid = children.pop(ready)
                os.close(ready)
                _, status, usage = os.wait4(pid, 0)
                cpu = usage.ru_utime + usage.ru_stime
                _send(
                    sock,
                    {"exited": pid, "returncode": os.waitstatus_to_exitcode(status), "cpu": cpu},
                )
            else:
                agents.ready(ready)
    finally:
        agents.close()


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    agents_listener = socket.socket(fileno=int(sys.argv[2]))
    preload()
    serve(sock, agents_listener)


if __name__ == "__main__":
    main()
