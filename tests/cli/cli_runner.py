"""Ways to run the `clarion` client commands in tests: in-process, as a subprocess, and under a
pseudo-terminal."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

from typer.testing import CliRunner

from clarion.cli.app import app
from tests.e2e.harness import ServerProcess

# Wide enough that Rich never folds an id or a title; no colour codes in what tests read.
WIDE = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(server: ServerProcess, *args: str) -> CliResult:
    """Run one client command in-process (Typer's runner; stdin is not a terminal)."""
    result = CliRunner().invoke(app, [*args, "--server", server.url], env=WIDE)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return CliResult(result.exit_code, result.stdout, result.stderr)


def cli(*args: str) -> list[str]:
    """argv for the real `clarion` entry point in a subprocess."""
    return [sys.executable, "-m", "clarion", *args]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, **WIDE, "PYTHONUNBUFFERED": "1", **(extra or {})}


def pending_of(server: ServerProcess, prompt: str) -> tuple[str, str, str]:
    """A fresh task whose built-in agent asks: (task_id, session_id, pending_id)."""
    task_id = server.create_task("CLI test")
    session_id = server.start_session(task_id, prompt)
    pending_id = server.wait_for_bundle(session_id)
    return task_id, session_id, pending_id


class Terminal:
    """A command under a pseudo-terminal: `expect` output, `send` keystrokes, bounded waits."""

    def __init__(self, argv: list[str]) -> None:
        import pty

        self._master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=child_env(), close_fds=True
        )
        os.close(slave)
        self.output = ""

    def expect(self, needle: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while needle not in self.output:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(remaining):
                raise AssertionError(f"no {needle!r} in terminal output:\n{self.output}")
        return self.output

    def send(self, line: str) -> None:
        os.write(self._master, line.encode() + b"\r")

    def wait(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.05):  # drain what is left
            pass
        code = self.proc.wait(timeout=max(deadline - time.monotonic(), 1))
        os.close(self._master)
        return code

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self._master, 65536)
        except OSError:  # the child closed the terminal
            return False
        if not chunk:
            return False
        self.output += _ANSI.sub("", chunk.decode(errors="replace")).replace("\r", "")
        return True

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)
