"""The forked servers' built-in agents (tests/agent_forks.py, tests/agent_shim.py): started by
the agent runtime as any agent is, a forked agent is the process `python -m
clarion.agents.builtin` would be, in the directory and environment it was given, over the
runtime's pipes; the shim's exit is the agent's (its status, its signal), a signal the shim
gets reaches the agent, and an agent never outlives its shim."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clarion.agents.runtime import AcpRuntime
from clarion.config import AgentProfile
from clarion.config.sandbox import SandboxConfig
from tests import agent_forks, forkserver
from tests.agents.agent_harness import RecordingSink, launch
from tests.e2e.harness import running_server, wait_until

pytestmark = pytest.mark.timeout(180)
STOP_GRACE_S = 60.0  # a stop that closes stdin waits this long before it signals: never here


@pytest.fixture
async def forked(tmp_path: Path) -> AsyncIterator[tuple[AcpRuntime, RecordingSink]]:
    """A runtime whose `builtin` profile runs the shim, as a forked server's does; the agent
    keeps its sessions under the relative CLARION_HOME `home`, in `tmp_path`."""
    command = agent_forks.shim_command(forkserver.fork_server().agent_socket)
    # Unsandboxed, as tests/agent_forks.py starts the shim: the zygote knows it by its pid.
    profile = AgentProfile(
        name="builtin",
        command=command,
        env={"CLARION_HOME": "home"},
        cwd=str(tmp_path),
        sandbox=SandboxConfig(mode="none"),
    )
    sink = RecordingSink()
    async with AcpRuntime({"builtin": profile}, sink, stop_grace=STOP_GRACE_S) as runtime:
        yield runtime, sink


async def _started(runtime: AcpRuntime) -> tuple[int, forkserver.ForkedProcess]:
    """Start session s1's agent: (the shim's pid, the agent the zygote forked for it)."""
    await runtime.ensure_started(launch())
    shim = runtime._agents["s1"].proc.pid
    agent = await asyncio.to_thread(forkserver.fork_server().agent, shim)
    assert agent.pid != shim
    return shim, agent


async def test_a_forked_agent_answers_in_its_directory_with_its_environment(
    forked: tuple[AcpRuntime, RecordingSink], tmp_path: Path
) -> None:
    runtime, sink = forked
    _, agent = await _started(runtime)

    await runtime.prompt("s1", "remember the lighthouse", generation=1)

    assert (await sink.finished(1)).stop_reason == "end_turn"
    assert sink.messages(1) == ["Received: remember the lighthouse"]
    assert os.readlink(f"/proc/{agent.pid}/cwd") == str(tmp_path)
    # CLARION_HOME=home, relative: found only from the agent's own directory.
    [memory] = (tmp_path / "home" / "builtin-agent" / "sessions").glob("*.json")
    assert json.loads(memory.read_text())["prompts"] == ["remember the lighthouse"]


async def test_the_end_of_its_stdin_ends_a_forked_agent_with_status_0_and_its_cpu_counts(
    forked: tuple[AcpRuntime, RecordingSink],
) -> None:
    runtime, _ = forked
    _, agent = await _started(runtime)
    proc = runtime._agents["s1"].proc
    zygote = forkserver.fork_server()
    reaped = zygote.children_cpu

    await runtime.stop("s1")  # closes stdin; signals only after STOP_GRACE_S

    assert proc.returncode == 0
    assert await asyncio.to_thread(agent.wait, 60) == 0
    # Its CPU, which the zygote reaped, counts in the CPU report.
    assert agent.cpu > 0
    assert zygote.children_cpu == pytest.approx(reaped + agent.cpu)


async def test_the_shim_exits_with_the_agents_status_and_the_agent_writes_the_stderr(
    forked: tuple[AcpRuntime, RecordingSink],
) -> None:
    runtime, sink = forked
    _, agent = await _started(runtime)

    await runtime.prompt("s1", "/scenario exit code=7 out of memory", generation=1)

    await sink.wait_for(lambda: bool(sink.exits))
    [exited] = sink.exits
    assert exited.exit_code == 7
    assert "out of memory" in exited.stderr
    assert await asyncio.to_thread(agent.wait, 60) == 7


async def test_a_signal_to_the_shim_reaches_the_agent_and_the_shim_dies_of_it_too(
    forked: tuple[AcpRuntime, RecordingSink],
) -> None:
    runtime, sink = forked
    shim, agent = await _started(runtime)

    os.kill(shim, signal.SIGTERM)

    assert await asyncio.to_thread(agent.wait, 60) == -signal.SIGTERM
    await sink.wait_for(lambda: bool(sink.exits))
    assert sink.exits[0].exit_code == -signal.SIGTERM


async def test_an_agent_whose_shim_is_killed_is_killed(
    forked: tuple[AcpRuntime, RecordingSink],
) -> None:
    runtime, sink = forked
    shim, agent = await _started(runtime)
    # In the middle of a prompt that never ends by itself.
    await runtime.prompt("s1", "/scenario stream n=100000 ms=20", generation=1)
    await sink.wait_for(lambda: len(sink.messages(1)) >= 2)

    os.kill(shim, signal.SIGKILL)

    assert await asyncio.to_thread(agent.wait, 60) == -signal.SIGKILL
    await sink.wait_for(lambda: bool(sink.exits))
    assert sink.exits[0].exit_code == -signal.SIGKILL


@pytest.mark.skipif(not forkserver.agents_forked(), reason="CLARION_TEST_FORKSERVER starts agents")
def test_a_forked_servers_builtin_agent_is_forked(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        session_id = server.start_session(server.create_task(), "hello")
        server.wait_for_agent_text(session_id, "Received: hello")
        assert server.proc is not None
        pid = server.proc.pid
        [shim] = wait_until(lambda: _children_running(pid, agent_forks.SHIM.name))

        agent = forkserver.fork_server().agent(shim)

        assert agent.poll() is None
    # Ended with its server: by its stdin's end, or a stop's SIGTERM or SIGKILL when it is slow.
    assert agent.wait(60) in (0, -signal.SIGTERM, -signal.SIGKILL)


def _children_running(parent: int, fragment: str) -> list[int]:
    """The live children of `parent` whose command line holds `fragment` (Linux: /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(ppid) == parent and state != "Z" and fragment.encode() in cmdline:
            found.append(int(stat.parent.name))
    return found
