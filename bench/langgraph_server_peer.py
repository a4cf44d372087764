"""LangGraph Server as a service peer: `langgraph dev` (`langgraph-api` on its in-memory
runtime) serving bench/langgraph_server/graph.py, from that folder's own lockfile and
environment (its pins would move the test tools of Clarion's lock).

A loop is one thread. Its cycle: `POST /threads/{id}/runs/wait` with `command.resume` -> the
node resumes, loops back and calls `interrupt()` again -> the response carries the next
interrupt. The in-memory runtime keeps threads and checkpoints in the process; every 10 s it
pickles them to `.langgraph_api/` in its working directory (a development convenience, not a
durable write before the answer). Its production runtime (PostgreSQL, Redis) needs a license key.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

from bench import peer_envs
from bench.peer_http import Http1
from bench.server import free_port

HERE = Path(__file__).parent / "langgraph_server"
BINARY = HERE / ".venv/bin/langgraph"
START_S = 120.0  # its start imports much: 9 s of one core here
# Why a resume takes about a second: the in-memory runtime's queue (`Runs.next` in
# langgraph_runtime_inmem/ops.py) sleeps 0.5 s before each look for pending runs.
CAUSE = (
    "in-memory runtime's run queue sleeps 0.5 s between polls (langgraph_runtime_inmem Runs.next)"
)


def install() -> str | None:
    """Make the server's environment from its lockfile if it is not there; the reason when it
    cannot be had, None when it is ready."""
    return peer_envs.uv_sync(HERE, BINARY)


class LangGraphServerPeer:
    name = "langgraph-server"

    def __init__(self, workdir: Path, jobs: int = 100) -> None:
        self._dir = workdir / f"langgraph-server-{uuid.uuid4().hex[:8]}"
        self._jobs = jobs
        self._proc: subprocess.Popen[bytes] | None = None
        self._port = 0

    def _launch(self) -> subprocess.Popen[bytes]:
        self._dir.mkdir(parents=True)
        self._port = free_port()
        # Its paths are read from the working directory, where it also writes its state.
        config = self._dir / "langgraph.json"
        graph = HERE / "graph.py"
        config.write_text(
            json.dumps({"dependencies": [str(HERE)], "graphs": {"ask": f"{graph}:graph"}})
        )
        env = {
            **os.environ,
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_NO_ANALYTICS": "1",
            "LANGSMITH_API_KEY": "",
        }
        with open(self._dir / "server.log", "wb") as log:  # the child holds it open
            return subprocess.Popen(
                [
                    str(BINARY),
                    "dev",
                    "--config",
                    str(config),
                    "--no-browser",
                    "--no-reload",
                    "--port",
                    str(self._port),
                    "--n-jobs-per-worker",
                    str(self._jobs),
                    "--server-log-level",
                    "warning",
                ],
                cwd=self._dir,  # where it writes .langgraph_api/
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    async def start(self) -> None:
        self._proc = proc = self._launch()
        log = self._dir / "server.log"
        http = Http1("127.0.0.1", self._port)
        deadline = time.monotonic() + START_S
        while True:
            try:
                if (await http.request("GET", "/ok"))[0] == 200:
                    break
            except OSError:
                await http.close()
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_bytes().decode(errors="replace")[-2000:]
                raise RuntimeError(f"langgraph dev did not start:\n{tail}")
            await asyncio.sleep(0.2)
        await http.close()

    def pids(self) -> list[int]:
        return [] if self._proc is None else [self._proc.pid]

    async def open_loop(self) -> LangGraphLoop:
        http = Http1("127.0.0.1", self._port)
        thread = await http.json("POST", "/threads", {})
        loop = LangGraphLoop(http, thread["thread_id"])
        await loop.run({"assistant_id": "ask", "input": {}})
        return loop

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class LangGraphLoop:
    def __init__(self, http: Http1, thread_id: str) -> None:
        self._http, self._thread = http, thread_id

    async def run(self, body: dict[str, object]) -> None:
        out = await self._http.json("POST", f"/threads/{self._thread}/runs/wait", body)
        if not out or "__interrupt__" not in out:
            raise RuntimeError(f"LangGraph Server run ended without the next interrupt: {out}")

    async def cycle(self) -> None:
        """Resume the open interrupt; back once the run reached the next one."""
        answer = {"db": {"selected_options": ["postgres"], "custom_text": ""}}
        await self.run({"assistant_id": "ask", "command": {"resume": answer}})

    async def close(self) -> None:
        await self._http.close()
