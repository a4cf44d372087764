"""Restate as a service peer: `restate-server` (the npm package `@restatedev/restate-server`,
pinned by bench/restate/package-lock.json) and the Python service of `bench.restate_service`.

The service runs from bench/restate's own environment (its pyproject.toml and uv.lock), made
on first use as the server is from its package-lock.json.

A loop is one `asker` workflow. Its cycle: resolve the awakeable over the ingress
(`POST /restate/awakeables/{id}/resolve`) -> the workflow resumes, creates the next awakeable
and publishes its id in a journaled step -> the id reaches the client. The server keeps every
step durable in its log (Bifrost on RocksDB in its data directory) before acting on it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from pathlib import Path

from bench import peer_envs
from bench.peer_http import Http1
from bench.server import free_port

HERE = Path(__file__).parent / "restate"
BINARY = HERE / "node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"
PYTHON = HERE / ".venv/bin/python"  # the service's interpreter, with restate-sdk
START_S = 60.0


def install() -> str | None:
    """Install the server and the service's environment from bench/restate's lockfiles if they
    are not there; the reason when they cannot be had, None when they are ready."""
    return peer_envs.npm_ci(HERE, BINARY) or peer_envs.uv_sync(HERE, PYTHON)


class RestatePeer:
    name = "restate"

    def __init__(self, workdir: Path) -> None:
        self._dir = workdir / f"restate-{uuid.uuid4().hex[:8]}"
        self._procs: list[subprocess.Popen[bytes]] = []
        self._queues: dict[str, asyncio.Queue[str]] = {}
        self._listener: asyncio.Server | None = None
        self._ingress_port = 0
        self._channels: list[asyncio.StreamWriter] = []

    def _launch(self, publish_port: int) -> tuple[int, int]:
        """Start the server and the service; their admin and service ports."""
        self._dir.mkdir(parents=True)
        service_port, self._ingress_port, admin_port = free_port(), free_port(), free_port()
        env = {
            **os.environ,
            "RESTATE_LISTEN_MODE": "tcp",
            "RESTATE_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
            "RESTATE_INGRESS__BIND_ADDRESS": f"127.0.0.1:{self._ingress_port}",
            "RESTATE_ADMIN__BIND_ADDRESS": f"127.0.0.1:{admin_port}",
            "RESTATE_DISABLE_TELEMETRY": "true",
            "RESTATE_LOG_FILTER": "warn",
        }
        # The children hold the log open; this process needs no handle of its own.
        with open(self._dir / "server.log", "wb") as log:
            self._procs.append(
                subprocess.Popen(
                    [str(BINARY), "--no-logo", "--base-dir", str(self._dir / "data")],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            self._procs.append(
                subprocess.Popen(
                    [
                        str(PYTHON),
                        "-m",
                        "bench.restate_service",
                        str(service_port),
                        str(publish_port),
                    ],
                    cwd=peer_envs.REPO,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        return admin_port, service_port

    async def start(self) -> None:
        self._listener = await asyncio.start_server(self._published, "127.0.0.1", 0)
        admin_port, service_port = self._launch(self._listener.sockets[0].getsockname()[1])
        log_name = self._dir / "server.log"
        admin = Http1("127.0.0.1", admin_port)
        deadline = time.monotonic() + START_S
        while True:
            try:
                status, _ = await admin.request("GET", "/health")
                if status == 200:
                    break
            except OSError:
                await admin.close()
            if time.monotonic() > deadline:
                tail = log_name.read_bytes().decode(errors="replace")[-2000:]
                raise RuntimeError(f"restate-server not ready in {START_S:g} s:\n{tail}")
            await asyncio.sleep(0.1)
        while True:  # the service may still be starting
            status, body = await admin.request(
                "POST", "/deployments", {"uri": f"http://127.0.0.1:{service_port}", "force": True}
            )
            if status < 300:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"registering the service failed: {status} {body[:300]!r}")
            await asyncio.sleep(0.1)
        await admin.close()

    async def _published(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._channels.append(writer)
        try:
            while line := await reader.readline():
                key, awakeable_id = line.decode().split()
                self._queues[key].put_nowait(awakeable_id)
        except (ConnectionError, asyncio.CancelledError):
            pass  # the service stopped, or the bench did

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    async def open_loop(self) -> RestateLoop:
        key = uuid.uuid4().hex
        self._queues[key] = asyncio.Queue()
        http = Http1("127.0.0.1", self._ingress_port)
        await http.json("POST", f"/asker/{key}/run/send")
        loop = RestateLoop(http, self._queues[key])
        await loop.ready()
        return loop

    def stop(self) -> None:
        for proc in reversed(self._procs):
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for channel in self._channels:
            channel.close()
        if self._listener is not None:
            self._listener.close()


class RestateLoop:
    def __init__(self, http: Http1, published: asyncio.Queue[str]) -> None:
        self._http, self._published = http, published
        self._awakeable = ""

    async def ready(self) -> None:
        self._awakeable = await asyncio.wait_for(self._published.get(), START_S)

    async def cycle(self) -> None:
        """Resolve the open awakeable; back once the next one is published."""
        await self._http.json(
            "POST", f"/restate/awakeables/{self._awakeable}/resolve", {"more": True}
        )
        await self.ready()

    async def close(self) -> None:
        await self._http.json(
            "POST", f"/restate/awakeables/{self._awakeable}/resolve", {"more": False}
        )
        await self._http.close()
