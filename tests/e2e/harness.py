"""A real `clarion serve` process for end-to-end tests: start, kill at a fault point, restart.

Tests talk to it only through the contract: HTTP, the WebSocket and the process exit code.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from tests import forkserver
from tests.ports import free_port

# One TLS context for every request the tests make: `httpx.get` and friends otherwise build one
# per call, loading the CA bundle (about 18 ms of CPU), and the tests poll many times a second;
# on two cores that was a large share of the suite's CPU. A client per call is otherwise cheap
# and closes its connection, which racing threads need.
TLS = ssl.create_default_context()


REQUEST_CEILING_S = 120.0

# Every server this pytest worker started, for the report of a test that fails: the end of the
# logs its servers wrote meanwhile (a server's side of a failure is otherwise lost with the
# temporary directory).
_STARTED: list[weakref.ref[ServerProcess]] = []
LOG_TAIL_LINES = 60

# How the built-in agent begins its reply to a resume prompt (a detached answer).
RESUME_MARK = "You previously asked the user:"

FAST_TIMEOUTS = {
    "CLARION_CLARIFICATION_WAIT_S": "30",
    "CLARION_KEEPALIVE_S": "1",
    "CLARION_RESUME_ACCEPT_S": "5",
    "CLARION_LIVE_CONFIRM_S": "5",
    "CLARION_WATCHDOG_S": "30",
    "CLARION_PERSIST_S": "5",
    "CLARION_NO_SAMPLE": "1",  # tests start from an empty database
}


def server_log_tails(since: float) -> list[tuple[str, str]]:
    """(title, last lines) of each log a server of this worker wrote after `since` (a
    `time.time()`), for a failed test's report."""
    _STARTED[:] = [ref for ref in _STARTED if ref() is not None]
    tails = []
    for ref in _STARTED:
        server = ref()
        if server is None:
            continue
        for path in sorted(server.workdir.glob("server-*.log")):
            if path.stat().st_mtime < since:
                continue
            lines = path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            tails.append((f"{path} (last {len(lines)} lines)", "\n".join(lines)))
    return tails


def wait_until(
    predicate: Callable[[], Any],
    *,
    timeout: float = 60.0,
    interval: float = 0.25,
    what: str = "condition",
) -> Any:
    """Poll `predicate` until it returns something truthy; fail with `what` after `timeout`.

    Polls start 20 ms apart and back off to `interval`: a quick condition is seen at once, and a
    slow one (an agent booting) does not cost the server a request every few milliseconds. The
    predicate is checked once more at the deadline."""
    deadline = time.monotonic() + timeout
    delay = min(0.02, interval)
    while True:
        last = predicate()
        if last:
            return last
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")
        time.sleep(min(delay, remaining))
        delay = min(delay * 1.5, interval)


@dataclass
class ServerProcess:
    database_url: str
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)
    bus_url: str = "memory"
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | forkserver.ForkedProcess | None = None
    starts: int = 0
    args: list[str] = field(default_factory=list)  # extra `clarion serve` flags
    headers: dict[str, str] = field(default_factory=dict)  # sent by the HTTP/WS helpers

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"server-{self.starts}.log"

    def start(
        self,
        *,
        failpoints: str = "",
        wait_ready: bool = True,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.starts += 1
        if not any(ref() is self for ref in _STARTED):
            _STARTED.append(weakref.ref(self))
        env = {
            **os.environ,
            **FAST_TIMEOUTS,
            **self.env,
            **(extra_env or {}),
            "CLARION_HOME": str(self.workdir / "home"),
            "CLARION_FAILPOINTS": failpoints,
            "CLARION_LOG_LEVEL": "INFO",
        }
        args = ["serve", "--port", str(self.port), "--database", self.database_url]
        args += ["--bus", self.bus_url, *self.args]
        with self.log_path.open("wb") as log:  # the child keeps its own descriptor
            if forkserver.enabled():
                with open(os.devnull, "rb") as devnull:
                    self.proc = forkserver.fork_server().popen(
                        args,
                        env=env,
                        cwd=self.workdir,
                        stdin=devnull.fileno(),
                        stdout=log.fileno(),
                        stderr=log.fileno(),
                        start_new_session=True,
                    )
            else:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "clarion", *args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=self.workdir,
                    start_new_session=True,
                )
        if wait_ready:
            self.wait_ready()

    # A ceiling, not a delay: a start on a loaded machine under coverage has taken ~40 s.
    def wait_ready(self, timeout: float = 120.0) -> None:
        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                return httpx.get(f"{self.url}/healthz", timeout=1, verify=TLS).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout=timeout, what="server /healthz")

    def wait_exit(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"server did not exit:\n{self.logs()}") from exc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=60)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()

    def _exits_soon(self) -> bool:
        """Whether the process has ended, or ends within seconds (a dying one is reaped late)."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return False
        return True

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob("server-*.log"))
        )

    # ------------------------------------------------------------------ HTTP helpers

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        # A ceiling, not a wait: starting a session answers once its agent started, and a
        # published agent (Node) took over 30 s to start on a loaded machine.
        try:
            return httpx.request(
                method,
                f"{self.url}/api/v1{path}",
                timeout=REQUEST_CEILING_S,
                headers=headers,
                verify=TLS,
                **kwargs,
            )
        except httpx.TransportError as exc:
            # A server that went away mid-request (it crashed, or a replica fenced itself) is
            # what the failure must say, not only the client's "disconnected". The error keeps
            # its type: some tests expect it from a fault point's crash.
            if self.proc is not None and self._exits_soon():
                tail = "\n".join(self.logs().splitlines()[-40:])
                exc.add_note(
                    f"{method} {path}: the server exited ({self.proc.returncode}) during the "
                    f"request; its log ends:\n{tail}"
                )
            raise

    def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        assert response.status_code == status, (
            f"{method} {path}: {response.status_code} {response.text}"
        )
        return response.json() if response.content else None

    def create_task(self, title: str = "Pick a database", description: str = "") -> str:
        return str(
            self.ok("POST", "/tasks", 201, json={"title": title, "description": description})[
                "task"
            ]["id"]
        )

    def start_session(self, task_id: str, prompt: str, agent: str = "builtin") -> str:
        body = self.ok(
            "POST", f"/tasks/{task_id}/task-sessions", 201, json={"agent": agent, "prompt": prompt}
        )
        return str(body["session"]["id"])

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        return list(self.ok("GET", f"/task-sessions/{session_id}/messages?limit=1000")["messages"])

    def agent_texts(self, session_id: str) -> list[str]:
        return [
            m["content"]
            for m in self.messages(session_id)
            if m["author_type"] == "agent" and m["type"] == "message"
        ]

    def wait_for_agent_text(self, session_id: str, needle: str, timeout: float = 60) -> str:
        return str(
            wait_until(
                lambda: next((t for t in self.agent_texts(session_id) if needle in t), None),
                timeout=timeout,
                what=f"agent text containing {needle!r}",
            )
        )

    def pending_ids(self, session_id: str) -> list[str]:
        seen: list[str] = []
        for m in self.messages(session_id):
            if m["type"] == "clarification_request":
                pid = m["metadata"]["pending_id"]
                if pid not in seen:
                    seen.append(pid)
        return seen

    def wait_for_bundle(self, session_id: str, *, index: int = 0, timeout: float = 60) -> str:
        ids = wait_until(
            lambda: len(self.pending_ids(session_id)) > index and self.pending_ids(session_id),
            timeout=timeout,
            what="a clarification bundle",
        )
        return str(ids[index])

    def bundle(self, pending_id: str) -> dict[str, Any]:
        return dict(self.ok("GET", f"/clarification/{pending_id}"))

    def wait_for_state(self, pending_id: str, state: str, timeout: float = 60) -> dict[str, Any]:
        return dict(
            wait_until(
                lambda: (b := self.bundle(pending_id))["state"] == state and b,
                timeout=timeout,
                what=f"bundle state {state}",
            )
        )

    def live_question(self) -> tuple[str, str]:
        """A new task's session whose agent asked and waits: (session id, pending id)."""
        session_id = self.start_session(self.create_task(), "/scenario ask")
        pending_id = self.wait_for_bundle(session_id)
        self.wait_for_state(pending_id, "active_live")
        return session_id, pending_id

    def detached_question(self) -> tuple[str, str]:
        """A new task's session whose agent asked, gave up after a second and ended its turn:
        (session id, pending id)."""
        session_id = self.start_session(self.create_task(), "/scenario ask-timeout t=1")
        pending_id = self.wait_for_bundle(session_id)
        self.wait_for_agent_text(session_id, "No answer yet; ending turn.")
        self.wait_for_state(pending_id, "active_detached")
        return session_id, pending_id

    def resume_prompts_seen(self, session_id: str) -> int:
        """How many resume prompts (a detached answer's new prompt) the agent has echoed."""
        return sum(RESUME_MARK in text for text in self.agent_texts(session_id))

    def respond(self, pending_id: str, body: dict[str, Any]) -> httpx.Response:
        return self.request("POST", f"/clarification/{pending_id}/respond", json=body)

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        return list(self.ok("GET", f"/task-sessions/{session_id}/turns")["turns"])

    @contextmanager
    def websocket(self) -> Iterator[ClientConnection]:
        with connect(
            f"ws://127.0.0.1:{self.port}/api/v1/ws", additional_headers=self.headers or None
        ) as ws:
            yield ws


def answer_survives_a_crash_while_the_agent_starts(
    server: ServerProcess, session_id: str, pending_id: str
) -> None:
    """On a server started with `resume.agent_ready=crash` whose agent for `session_id` is not
    running: the answer that must start it crashes the server; after a restart the question is
    still open and undelivered, and answering again resumes the agent once."""
    with pytest.raises(httpx.HTTPError):
        server.respond(pending_id, answer("db", "sqlite"))
    assert server.wait_exit() == 137
    server.start()

    bundle = server.bundle(pending_id)
    assert bundle["state"] == "active_detached"
    assert bundle["delivery"] is None
    assert all(r["metadata"]["status"] == "pending" for r in bundle["rows"])
    again = server.respond(pending_id, answer("db", "sqlite"))
    assert again.status_code == 200, again.text
    assert again.json()["resumed"] is True
    server.wait_for_agent_text(session_id, RESUME_MARK)
    assert server.resume_prompts_seen(session_id) == 1


def answer(question_id: str = "db", option: str = "postgres", text: str = "") -> dict[str, Any]:
    return {
        "answers": [
            {"question_id": question_id, "selected_options": [option], "custom_text": text}
        ],
        "rejected": False,
        "reject_reason": "",
    }


SKIP = {"rejected": True, "reject_reason": "User skipped", "answers": []}


@contextmanager
def running_server(tmp: Path, *, args: Sequence[str] = (), **env: str) -> Iterator[ServerProcess]:
    """A started server (`clarion serve ARGS`, in-process bus) on a fresh SQLite database in
    `tmp`, stopped on exit: a graceful stop lets it and its agents write their coverage data."""
    workdir = tmp / "server"
    workdir.mkdir()
    server = ServerProcess(
        database_url=f"sqlite:///{tmp / 'clarion.db'}", workdir=workdir, args=list(args), env=env
    )
    try:
        server.start()
        yield server
    finally:
        server.stop()


def recv_until(
    ws: ClientConnection, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError("no matching WebSocket message in time")
        message = json.loads(ws.recv(timeout=remaining))
        if predicate(message):
            return dict(message)
