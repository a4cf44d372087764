"""An agent's whole process tree ends with it: on a stop, when the agent exits on its own, and
when the server that started it is killed with SIGKILL (so it can clean up nothing)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from clarion.agents.process import build_env, shut_down, spawn
from tests import process_leaks

pytestmark = pytest.mark.timeout(60)

# An agent that starts a grandchild, reports both pids, then ignores end of input and SIGTERM
# until killed (the worst case for a stop) - or exits at once when told to.
_AGENT = r"""
import signal, subprocess, sys, time
grandchild = subprocess.Popen(["sleep", "300"])
print(grandchild.pid, flush=True)
if sys.argv[1] == "exit":
    sys.exit(3)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(300)
"""

# A server stand-in on the event loop the server runs (uvloop) or plain asyncio: spawns the agent
# the way Clarion does and prints the pids; then waits to be killed, or stops the agent itself.
_SERVER = r"""
import asyncio, sys
from clarion.agents.process import build_env, shut_down, spawn
async def main():
    proc = await spawn([sys.executable, "-c", sys.argv[1], "hold"], build_env({}, None), "/")
    grandchild = (await proc.stdout.readline()).decode().strip()
    print(proc.pid, grandchild, flush=True)
    if sys.argv[3] == "stop":
        print(await shut_down(proc, 0.2), flush=True)
    await asyncio.sleep(300)
if sys.argv[2] == "uvloop":
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
"""
LOOPS = ["asyncio", "uvloop"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(*pids: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    try:
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)], "processes outlived their agent"
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


async def _start(mode: str) -> tuple[asyncio.subprocess.Process, int]:
    proc = await spawn([sys.executable, "-c", _AGENT, mode], build_env({}, None), "/")
    assert proc.stdout is not None
    grandchild = int(await proc.stdout.readline())
    assert _alive(grandchild)
    return proc, grandchild


async def test_stopping_an_agent_ends_its_children_too() -> None:
    proc, grandchild = await _start("hold")
    code = await shut_down(proc, grace=0.2)
    assert code == -signal.SIGKILL
    assert not _alive(grandchild)


async def test_an_agent_that_exits_on_its_own_leaves_no_children() -> None:
    proc, grandchild = await _start("exit")
    assert await proc.wait() == 3
    await asyncio.to_thread(_wait_gone, grandchild)


def test_an_agent_that_exited_is_reaped_with_its_guard_when_the_loop_closes_at_once() -> None:
    # The loop closing cancels the guard's sweep wherever it is: still watching the agent, or
    # already waiting for the guard to go. Either way both children must be seen to exit.
    for _ in range(20):
        with asyncio.Runner() as runner:
            proc = runner.run(_spawn_quiet(["true"]))
            assert runner.run(proc.wait()) == 0
        assert process_leaks.leaked() == []


def test_an_agent_nobody_stopped_ends_with_its_group_when_the_loop_closes() -> None:
    with asyncio.Runner() as runner:
        proc, grandchild = runner.run(_start("hold"))
    assert process_leaks.leaked() == []
    assert proc.returncode == -signal.SIGKILL
    _wait_gone(grandchild)


async def _spawn_quiet(command: list[str]) -> asyncio.subprocess.Process:
    return await spawn(command, build_env({}, None), "/")


@pytest.mark.parametrize("loop", LOOPS)
def test_agents_and_their_children_die_with_a_sigkilled_server(loop: str) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _SERVER, _AGENT, loop, "kill"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as server:
        assert server.stdout is not None
        agent, grandchild = (int(p) for p in server.stdout.readline().split())
        assert _alive(agent) and _alive(grandchild)
        server.send_signal(signal.SIGKILL)
    _wait_gone(agent, grandchild)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_stop_ends_the_agents_tree_on_the_servers_event_loop(loop: str) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _SERVER, _AGENT, loop, "stop"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    ) as server:
        assert server.stdout is not None
        agent, grandchild = (int(p) for p in server.stdout.readline().split())
        code = int(server.stdout.readline())
        try:
            assert code == -signal.SIGKILL
            assert not _alive(agent) and not _alive(grandchild)
        finally:
            server.kill()
