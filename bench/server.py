"""A `clarion serve` subprocess on a fresh database, for the benchmarks.

Owns the process (start, wait for /healthz, stop) and the database it runs on: a new SQLite
file in a temporary directory, or a new PostgreSQL database created from template0 and
dropped afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.relay_agent import RELAY_DIR_ENV

POSTGRES_URL = os.environ.get(
    "CLARION_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)

# Long enough that no watchdog, keep-alive or wait timeout fires during a measurement.
SERVER_ENV = {
    "CLARION_NO_SAMPLE": "1",
    "CLARION_WATCHDOG_S": "3600",
    "CLARION_CLARIFICATION_WAIT_S": "3600",
    "CLARION_KEEPALIVE_S": "600",
    "CLARION_RESUME_ACCEPT_S": "30",
    "CLARION_LIVE_CONFIRM_S": "30",
    "CLARION_PERSIST_S": "30",
    "CLARION_LOG_LEVEL": "WARNING",
    "CLARION_FAILPOINTS": "",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_parts(url: str) -> tuple[str, str]:
    base, _, _db = url.rpartition("/")
    return base, _db


async def postgres_reachable() -> bool:
    import asyncpg

    try:
        conn = await asyncpg.connect(POSTGRES_URL, timeout=3)
    except (TimeoutError, OSError, asyncpg.PostgresError):
        return False
    await conn.close()
    return True


@contextlib.asynccontextmanager
async def fresh_database(kind: str, workdir: Path) -> AsyncIterator[str]:
    """A URL for a brand-new empty database of `kind` ("sqlite" or "postgres")."""
    if kind == "sqlite":
        path = workdir / f"bench-{secrets.token_hex(4)}.db"
        yield f"sqlite:///{path}"
        return
    import asyncpg

    name = f"clarion_bench_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(POSTGRES_URL, timeout=5)
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    finally:
        await admin.close()
    try:
        yield f"{_pg_parts(POSTGRES_URL)[0]}/{name}"
    finally:
        admin = await asyncpg.connect(POSTGRES_URL, timeout=5)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@dataclass
class BenchServer:
    database_url: str
    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    # How to run the CLI; a profiling wrapper may replace it (see bench.trace).
    launcher: list[str] = field(default_factory=lambda: [sys.executable, "-m", "clarion"])
    extra_env: dict[str, str] = field(default_factory=dict)
    # Where `bench.relay_agent` leaves each session's MCP endpoint (default: under workdir).
    # The replicas of a cluster share one: a session's agent runs on whichever replica owns it.
    shared_relay_dir: Path | None = None
    # More of the config file (TOML), after the relay profile: e.g. `[agents.builtin]` options.
    extra_config: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def relay_dir(self) -> Path:
        """Where `bench.relay_agent` leaves each session's MCP endpoint."""
        return self.shared_relay_dir or self.workdir / "relay"

    def _write_config(self) -> Path:
        """The agent profile `relay` (see bench.relay_agent) beside the always-present builtin."""
        config = self.workdir / "clarion.toml"
        repo_root = Path(__file__).resolve().parent.parent
        command = ", ".join(
            json.dumps(part) for part in (sys.executable, "-m", "bench.relay_agent")
        )
        # The relay agent writes its endpoint there, from inside its sandbox.
        self.relay_dir.mkdir(parents=True, exist_ok=True)
        config.write_text(
            "[agents.relay]\n"
            f"command = [{command}]\n"
            f"extra_write = [{json.dumps(str(self.relay_dir))}]\n"
            f"env = {{ {RELAY_DIR_ENV} = {json.dumps(str(self.relay_dir))}, "
            f"PYTHONPATH = {json.dumps(str(repo_root))} }}\n" + self.extra_config
        )
        return config

    @property
    def api(self) -> str:
        return f"{self.url}/api/v1"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/v1/ws"

    def spawn(self) -> float:
        """Start the process; returns the perf_counter instant just before the exec."""
        self.starts += 1
        env = {
            **os.environ,
            **SERVER_ENV,
            **self.extra_env,
            "CLARION_HOME": str(self.workdir / "home"),
        }
        log = (self.workdir / f"server-{self.starts}.log").open("wb")
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                *self.launcher,
                "serve",
                "--port",
                str(self.port),
                "--database",
                self.database_url,
                "--config",
                str(self._write_config()),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.workdir,
            start_new_session=True,
        )
        log.close()  # the child keeps its own descriptor
        return started

    def listening(self) -> bool:
        """Whether the port accepts a connection: a bare connect, refused at once until the
        server listens, costs the poller a few system calls where a refused request through
        httpx costs it about a millisecond of CPU."""
        with socket.socket() as sock:
            # A connect on loopback is answered at once; a non-blocking one may still say only
            # EINPROGRESS before the refusal, which would read as listening.
            sock.settimeout(1.0)
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    async def until_listening(self, deadline: float, every: float) -> None:
        """Poll with a bare connect (`listening`) every `every` seconds until the port accepts,
        the process exits or the perf_counter `deadline` passes; the caller's own polling then
        says which. A cold start spends seconds importing before it listens, and a refused
        request through httpx costs the poller about a millisecond of CPU (on a slow 2-core
        host 1.4 CPU-s a start, against 0.35 with the bare connect)."""
        while time.perf_counter() < deadline and not self.listening():
            if self.proc is not None and self.proc.poll() is not None:
                return
            await asyncio.sleep(every)

    async def wait_ready(self, limit: float = 120.0) -> float:
        """Poll /healthz every 5 ms until 200 (a bare connect until the port listens:
        `until_listening`); returns the perf_counter instant it answered."""
        deadline = time.perf_counter() + limit
        await self.until_listening(deadline, every=0.005)
        async with httpx.AsyncClient(timeout=2) as client:
            while time.perf_counter() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.logs()}")
                try:
                    response = await client.get(f"{self.url}/healthz")
                    if response.status_code == 200:
                        return time.perf_counter()
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.005)
        raise TimeoutError(f"server not ready after {limit}s")

    async def start(self) -> float:
        """Start and wait until ready; returns seconds from exec to /healthz 200."""
        began = self.spawn()
        return await self.wait_ready() - began

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-4000:] for p in sorted(self.workdir.glob("server-*.log"))
        )
