"""What the agent sandbox costs an agent's start: from spawning the built-in agent to its reply
to ACP `initialize`, unsandboxed and in bubblewrap, the two taken in turn so that the host's
load falls on both alike. Started the way the runtime starts agents (`process.spawn`, the
process-group guard, the ACP client), with a Clarion home, database and config file to hide,
as a server's agents have."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from bench.stats import Row, ms, percentile
from clarion.agents.process import build_env, shut_down, spawn
from clarion.agents.sandbox import bwrap_problem
from clarion.config import AgentProfile, builtin_profile
from clarion.config.sandbox import HiddenPaths, SandboxConfig, hidden_paths

# The sandbox's share of a start (bubblewrap, its mounts, a new pid namespace) at the median.
OVERHEAD_TARGET_MS = 20.0
STOP_GRACE_S = 2.0


class _Quiet:
    """A sink and permission policy that note nothing: only the handshake is timed."""

    async def on_output(self, output: Any) -> None:
        return None

    async def on_prompt_finished(self, finished: Any) -> None:
        return None

    async def on_agent_exited(self, exited: Any) -> None:
        return None

    async def on_permission(self, ask: Any) -> str | None:
        return None


async def _start_to_initialize(profile: AgentProfile, sandbox: SandboxConfig, cwd: Path) -> float:
    from clarion.agents.client import deny_all
    from clarion.agents.running_agent import RunningAgent

    began = time.perf_counter()
    proc = await spawn(profile.command, build_env(profile.env, None), str(cwd), sandbox)
    agent = RunningAgent(session_id="bench", profile=profile.name, proc=proc, sink=_Quiet())
    agent.attach(deny_all)
    try:
        await agent.handshake()
        return time.perf_counter() - began
    finally:
        await agent.close(STOP_GRACE_S)


async def _start_to_exit(sandbox: SandboxConfig, cwd: Path) -> float:
    """`true` as the agent: what the sandbox's own setup costs, without the agent's start.
    (It exits before its process group can be guarded, which the runtime logs; not news.)"""
    logging.getLogger("clarion.agents.process").setLevel(logging.ERROR)
    began = time.perf_counter()
    proc = await spawn(["true"], build_env({}, None), str(cwd), sandbox)
    await proc.wait()
    elapsed = time.perf_counter() - began
    await shut_down(proc, STOP_GRACE_S)
    return elapsed


async def rows(workdir: Path, starts: int) -> list[Row]:
    """p50 of each mode and the difference, `starts` starts of each."""
    name = "agent start to ACP initialize reply"
    problem = bwrap_problem()
    if problem is not None:
        return [Row("-", f"{name}, sandbox", "skipped", note=problem)]
    from clarion.agents.runtime import load_agent_modules

    load_agent_modules()
    home = workdir / "sandbox-bench"
    cwd = home / "work"
    cwd.mkdir(parents=True, exist_ok=True)
    (home / "clarion.db").write_text("")
    hidden: HiddenPaths = hidden_paths(home, f"sqlite:///{home / 'clarion.db'}", None, None)
    profile = builtin_profile(home, hidden)
    modes = {"none": SandboxConfig(mode="none"), "bwrap": profile.sandbox}
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    bare: dict[str, list[float]] = {mode: [] for mode in modes}
    await _start_to_initialize(profile, modes["none"], cwd)  # a warm page cache for both
    for _ in range(starts):
        for mode, sandbox in modes.items():
            samples[mode].append(await _start_to_initialize(profile, sandbox, cwd))
            bare[mode].append(await _start_to_exit(sandbox, cwd))
    p50 = {mode: ms(percentile(values, 50)) for mode, values in samples.items()}
    true_p50 = {mode: ms(percentile(values, 50)) for mode, values in bare.items()}
    # What the sandbox adds to a start: bubblewrap's own setup (mounts, namespaces, its init)
    # and teardown, from the `true` pairs. The agent-start pairs carry it too, but a built-in
    # agent's start varies by hundreds of milliseconds on a loaded host, so the difference of
    # their medians is reported beside it, not judged.
    overhead = true_p50["bwrap"] - true_p50["none"]
    note = f"n={starts} each, taken in turn; the built-in agent"
    return [
        Row("-", "spawn to exit of `true`, sandbox none p50", f"{true_p50['none']:.1f} ms"),
        Row(
            "-",
            "spawn to exit of `true`, sandbox bwrap p50",
            f"{true_p50['bwrap']:.1f} ms",
            note="bubblewrap's own setup and teardown, no agent start",
        ),
        Row("-", f"{name}, sandbox none p50", f"{p50['none']:.1f} ms", note=note),
        Row("-", f"{name}, sandbox bwrap p50", f"{p50['bwrap']:.1f} ms", note=note),
        Row(
            "-",
            f"{name}, bwrap p50 - none p50",
            f"{p50['bwrap'] - p50['none']:.1f} ms",
            note="not judged: an agent start varies far more than this on a loaded host",
        ),
        Row(
            "-",
            "sandbox's share of an agent start p50",
            f"{overhead:.1f} ms",
            f"<= {OVERHEAD_TARGET_MS:g} ms",
            overhead <= OVERHEAD_TARGET_MS,
            "`true` in bwrap p50 minus `true` p50",
        ),
    ]
