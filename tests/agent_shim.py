"""Stands in for `python -m clarion.agents.builtin` in a forked server (`tests/agent_forks.py`):
`python -S -I tests/agent_shim.py SOCKET -m clarion.agents.builtin`.

It hands the zygote listening on SOCKET its stdin, stdout and stderr, environment, directory
and arguments, keeps none of those streams (the server must see their end when the agent
exits, not when the shim does), passes on the signals a stop sends (TERM, INT, HUP) and exits
as the agent did: with its status, or by the same signal. Standard library only, run without
`site`: it must start in milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _exit_as(returncode: int) -> None:
    """Exit with `returncode` as `subprocess` reports it: a negative one is a signal."""
    if returncode >= 0:
        os._exit(returncode)
    signum = -returncode
    if signum != signal.SIGKILL:  # which has no handler to reset and cannot be blocked
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal whose default is not to end the process


def main() -> None:
    # Held until the zygote has the request: a signal before that is passed on, not lost.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    path, *argv = sys.argv[1:]
    zygote = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        zygote.connect(path)
    except OSError as exc:
        print(f"agent shim: cannot reach the zygote at {path}: {exc}", file=sys.stderr)
        os._exit(127)
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(zygote, [json.dumps(request).encode()], [0, 1, 2])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)

    def forward(signum: int, frame: object) -> None:
        # Refused only once the agent has exited and the zygote has said so: nothing to pass on.
        with contextlib.suppress(OSError):
            zygote.send(json.dumps({"signal": signum}).encode())

    for signum in FORWARDED:
        signal.signal(signum, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    data = zygote.recv(1 << 16)  # retried after a forwarding handler runs
    if not data:  # the zygote ended first, and its agents with it
        _exit_as(-signal.SIGKILL)
    _exit_as(int(json.loads(data)["returncode"]))


if __name__ == "__main__":
    main()
