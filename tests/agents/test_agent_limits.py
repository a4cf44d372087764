"""`pids_max` and `memory_max`: an agent that forks without end or allocates without end stops
at its own limits, in its own control group, while this process (the server's place) goes on.
Real processes, sandboxed and not; bounded: the fork bomb gives up at its first refused fork and
the allocation at 1 GiB."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from clarion.agents import limits
from clarion.agents.limits import limits_problem
from clarion.agents.process import build_env, shut_down, spawn
from clarion.agents.sandbox import bwrap_problem
from clarion.config.sandbox import SandboxConfig

pytestmark = pytest.mark.skipif(limits_problem() is not None, reason="no writable cgroups here")

RUN_S = 60.0
PIDS_MAX = 24

# Forks children that sleep until the first fork is refused, reports how many it got, then
# ends them: a fork bomb that stops by itself.
FORK_BOMB = """
import os, signal, sys, time
children = []
for _ in range(2000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children.append(pid)
print(f"forked {len(children)}", flush=True)
for pid in children:
    os.kill(pid, signal.SIGKILL)
"""

ALLOCATE = """
chunks = []
for i in range(1024):
    chunks.append(bytearray(1 << 20))
print("allocated 1 GiB", flush=True)
"""


def modes() -> list[str]:
    return ["none"] + (["bwrap"] if bwrap_problem() is None else [])


async def run_python(code: str, tmp_path: Path, sandbox: SandboxConfig) -> tuple[int, str]:
    proc = await spawn([sys.executable, "-c", code], build_env({}, None), str(tmp_path), sandbox)
    async with asyncio.timeout(RUN_S):
        out, _ = await proc.communicate()
    returncode = await shut_down(proc, 1.0)
    return returncode, out.decode()


@pytest.mark.parametrize("mode", modes())
async def test_a_fork_bomb_stops_at_pids_max(tmp_path: Path, mode: str) -> None:
    sandbox = SandboxConfig(mode=mode, pids_max=PIDS_MAX)  # type: ignore[arg-type]
    _, out = await run_python(FORK_BOMB, tmp_path, sandbox)
    forked = int(out.split()[-1])
    assert 0 < forked < PIDS_MAX
    # This process forks as before.
    assert (await run_python("print('fine')", tmp_path, SandboxConfig(mode="none")))[1] == "fine\n"


@pytest.mark.parametrize("mode", modes())
async def test_a_runaway_allocation_is_killed_at_memory_max(tmp_path: Path, mode: str) -> None:
    sandbox = SandboxConfig(mode=mode, memory_max=128 << 20)  # type: ignore[arg-type]
    returncode, out = await run_python(ALLOCATE, tmp_path, sandbox)
    assert "allocated" not in out
    assert returncode in (-9, 128 + 9)  # SIGKILLed by the OOM killer (bubblewrap: 128 + 9)


async def test_the_agents_group_is_removed_once_it_has_ended(tmp_path: Path) -> None:
    found = limits.hierarchy()
    assert not isinstance(found, str)
    before = set(os.listdir(found.pids))
    sandbox = SandboxConfig(mode="none", pids_max=PIDS_MAX, memory_max=256 << 20)
    proc = await spawn(["sleep", "30"], build_env({}, None), str(tmp_path), sandbox)
    during = set(os.listdir(found.pids)) - before
    assert len(during) == 1
    [group] = during
    procs = found.pids / group / "cgroup.procs"
    async with asyncio.timeout(RUN_S):  # the agent's shell joins, then becomes the agent
        while str(proc.pid) not in (await asyncio.to_thread(procs.read_text)).split():  # noqa: ASYNC110 - the kernel's file, no event
            await asyncio.sleep(0.01)
    await shut_down(proc, 0.5)
    assert set(os.listdir(found.pids)) == before
