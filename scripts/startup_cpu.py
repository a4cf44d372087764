"""What a process start costs in CPU: user+sys seconds of `clarion serve` (start to ready, then
SIGTERM), of the built-in agent (driven by an ACP client), of the built-in agent forked as the
tests' servers fork theirs (tests/agent_forks.py: the shim's CPU, the agent's and the zygote's
meanwhile), and of short CLI commands; the median of N runs. Run it under `coverage run
--rcfile=pyproject.toml` to measure as `make test` does (coverage's subprocess patch hands the
children its configuration).

    .venv/bin/python scripts/startup_cpu.py serve agent:"/scenario echo hi" cli:"db status"
    .venv/bin/python scripts/startup_cpu.py forked-agent:"/scenario echo hi"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

# The environment the suite's servers get (tests/e2e/harness.py): no sample task.
SUITE_ENV = {
    "CLARION_CLARIFICATION_WAIT_S": "30",
    "CLARION_KEEPALIVE_S": "1",
    "CLARION_RESUME_ACCEPT_S": "5",
    "CLARION_LIVE_CONFIRM_S": "5",
    "CLARION_WATCHDOG_S": "30",
    "CLARION_PERSIST_S": "5",
    "CLARION_NO_SAMPLE": "1",
    "CLARION_LOG_LEVEL": "INFO",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _reaped_cpu(pid: int) -> float:
    """Wait for `pid`; its CPU and that of the children it reaped."""
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime


def serve_once(workdir: Path) -> float:
    port = _free_port()
    env = {**os.environ, **SUITE_ENV, "CLARION_HOME": str(workdir / "home")}
    argv = [sys.executable, "-m", "clarion", "serve", "--port", str(port)]
    argv += ["--database", f"sqlite:///{workdir / 'c.db'}", "--bus", "memory"]
    with (workdir / "server.log").open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit((workdir / "server.log").read_text())
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    return _reaped_cpu(proc.pid)


def cli_once(workdir: Path, args: list[str]) -> float:
    env = {**os.environ, "CLARION_HOME": str(workdir / "home")}
    env.setdefault("CLARION_DATABASE_URL", f"sqlite:///{workdir / 'c.db'}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "clarion", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    return _reaped_cpu(proc.pid)


class _QuietClient:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None


def agent_once(
    workdir: Path,
    prompt: str,
    hold_s: float,
    command: tuple[str, ...] = (sys.executable, "-m", "clarion.agents.builtin"),
    started: Callable[[int], None] = lambda pid: None,
) -> float:
    """The built-in agent: initialize, session/new (an MCP endpoint nobody serves), one prompt,
    alive for `hold_s` more (background imports finish), then stdin closed. `started` is
    given the process's pid once it has answered `initialize`."""
    import acp
    from acp.schema import ClientCapabilities, HttpMcpServer, Implementation

    async def drive() -> None:
        env = {**os.environ, "CLARION_HOME": str(workdir / "home")}
        async with acp.spawn_agent_process(
            _QuietClient(),  # type: ignore[arg-type]
            *command,
            env=env,
            transport_kwargs={"stderr": subprocess.DEVNULL},
        ) as (conn, process):
            await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="startup-cpu", version="1"),
            )
            started(process.pid)  # it answers: it runs
            mcp = HttpMcpServer(type="http", name="c", url="http://127.0.0.1:9/mcp", headers=[])
            session = await conn.new_session(cwd=str(workdir), mcp_servers=[mcp])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(prompt)])
            await asyncio.sleep(hold_s)

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    asyncio.run(drive())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def forked_agent_once(workdir: Path, prompt: str, hold_s: float) -> float:
    """`agent_once` through the shim of the tests' forked servers: the shim's CPU, the forked
    agent's and the zygote's own meanwhile. The first call runs one more, unmeasured, first:
    the zygote's CPU then is its imports."""
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests import agent_forks, forkserver

    first = not forkserver._server
    zygote = forkserver.fork_server()
    if first:
        forked_agent_once(workdir, prompt, hold_s)
    agents: list[forkserver.ForkedProcess] = []
    before = forkserver.reaped_cpu()
    shim = agent_once(
        workdir,
        prompt,
        hold_s,
        command=agent_forks.shim_command(zygote.agent_socket),
        started=lambda pid: agents.append(zygote.agent(pid)),
    )
    agents[0].wait(timeout=60)
    return shim + forkserver.reaped_cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "what", nargs="+", help='serve | agent:"PROMPT" | forked-agent:"PROMPT" | cli:"ARGS"'
    )
    parser.add_argument("-n", type=int, default=5, help="runs of each (the median is printed)")
    parser.add_argument("--hold", type=float, default=4.0, help="seconds an agent stays up")
    options = parser.parse_args()
    for what in options.what:
        runs = []
        for _ in range(options.n):
            with tempfile.TemporaryDirectory(prefix="startup-cpu") as tmp:
                workdir = Path(tmp)
                if what == "serve":
                    runs.append(serve_once(workdir))
                elif what.startswith("agent:"):
                    runs.append(agent_once(workdir, what.removeprefix("agent:"), options.hold))
                elif what.startswith("forked-agent:"):
                    prompt = what.removeprefix("forked-agent:")
                    runs.append(forked_agent_once(workdir, prompt, options.hold))
                elif what.startswith("cli:"):
                    runs.append(cli_once(workdir, what.removeprefix("cli:").split()))
                else:
                    parser.error(f"unknown: {what}")
        shown = " ".join(f"{r:.2f}" for r in runs)
        print(f"{what:40} median {statistics.median(runs):5.2f} CPU-s  ({shown})", flush=True)
    if "tests.forkserver" in sys.modules:  # end the zygote: it saves its coverage data
        sys.modules["tests.forkserver"].shutdown()


if __name__ == "__main__":
    main()
