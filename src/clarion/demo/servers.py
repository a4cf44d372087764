"""A `clarion serve` subprocess on a temporary database, for the demo: start, kill, restart."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from clarion.client.errors import EXIT_SERVER_ERROR, CliError
from clarion.client.http import ClarionClient


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DemoServer:
    """One server process at a time on `home/clarion.db`; every start reuses the same port."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.database_url = f"sqlite:///{home / 'clarion.db'}"
        self.log_path = home / "server.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        env = {
            **os.environ,
            "CLARION_HOME": str(self.home),
            "CLARION_NO_SAMPLE": "1",  # the demo makes its own tasks
            "CLARION_FAILPOINTS": "",
        }
        for inherited in ("CLARION_DATABASE_URL", "CLARION_BUS_URL", "CLARION_CONFIG"):
            env.pop(inherited, None)
        with self.log_path.open("ab") as log:  # the child keeps its own descriptor
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "clarion",
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--database",
                    self.database_url,
                    "--bus",
                    "memory",
                    "--no-auth",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # one process group: kill takes the agents with it
            )
        probe = ClarionClient(self.url)
        deadline = time.monotonic() + timeout
        try:
            while not probe.healthy():
                if self._proc.poll() is not None:
                    raise CliError(
                        f"clarion serve exited with status {self._proc.returncode}",
                        EXIT_SERVER_ERROR,
                        tuple(self.log_tail()),
                    )
                if time.monotonic() > deadline:
                    raise CliError(
                        "clarion serve did not become ready in time",
                        EXIT_SERVER_ERROR,
                        tuple(self.log_tail()),
                    )
                time.sleep(0.05)
        finally:
            probe.close()

    def kill(self) -> None:
        """SIGKILL the whole process group: no shutdown code runs, as in a crash."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        self._signal(signal.SIGTERM)

    def _signal(self, sig: signal.Signals) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        # Agents left behind in the group (the server is gone) go too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        self._proc = None

    def log_tail(self, lines: int = 15) -> list[str]:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return ["server log:", *text.splitlines()[-lines:]]
