"""A small synchronous client for Clarion's HTTP API and WebSocket, used by the CLI and the demo.

Every failure comes out as a CliError with the exit code of docs/cli.md, so commands never
print tracebacks for what a server can be expected to say.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from clarion.client.errors import EXIT_SERVER_ERROR, EXIT_UNREACHABLE, CliError, api_error

DEFAULT_SERVER = "http://127.0.0.1:8787"

# The server bounds its own waits: starting an agent (60 s), then the agent accepting a resume
# prompt (CLARION_RESUME_ACCEPT_S, 30 s), each persistence step (CLARION_PERSIST_S, 30 s). The
# client waits longer than all of them together, so a hung agent shows up as the server's own
# error reply rather than as "the server did not answer in time".
HTTP_TIMEOUT = 180.0
CONNECT_TIMEOUT = 10.0  # no server at the address: say so quickly
PROGRESS_EVERY = 5.0  # seconds between "still waiting" notes during a long request

Progress = Callable[[str, float], None]  # (what is being waited for, seconds so far)


class ClarionClient:
    """One server at `base_url`; `token` is sent as a Bearer token when access control is on."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = HTTP_TIMEOUT,
        progress: Progress | None = None,
        progress_every: float = PROGRESS_EVERY,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=f"{self.base_url}/api/v1",
            headers=self._headers,
            timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout)),
            transport=transport,
        )
        self._progress = progress
        self._progress_every = progress_every

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ClarionClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ raw calls

    def call(
        self, method: str, path: str, *, json: Any = None, what: str | None = None
    ) -> httpx.Response:
        """Send one request; non-2xx replies raise CliError described by `what`."""
        label = what or f"{method} {path}"
        response = self.call_raw(method, path, json=json, what=label)
        if response.status_code >= 400:
            raise api_error(response.status_code, response.text, label)
        return response

    def call_raw(
        self, method: str, path: str, *, json: Any = None, what: str | None = None
    ) -> httpx.Response:
        """Send one request and return the reply whatever its status; only an unreachable
        server raises (CliError, exit code 5)."""
        label = what or f"{method} {path}"
        try:
            with self._reporting(label):
                response = self._http.request(method, path, json=json)
                location = response.headers.get("location")
                if response.status_code == 307 and location:
                    # A cluster replica sends a request for another replica's session to that
                    # replica (`redirect_to_owner`, docs/cluster.md), which serves it itself.
                    # Sent there once, credentials included: httpx would drop them on a
                    # redirect to another host, and the owner never redirects again.
                    response = self._http.request(method, location, json=json)
                return response
        except httpx.TimeoutException as exc:
            raise CliError(
                f"{label}: the server at {self.base_url} did not answer in time", EXIT_UNREACHABLE
            ) from exc
        except httpx.HTTPError as exc:
            raise CliError(
                f"cannot reach the Clarion server at {self.base_url} ({exc})",
                EXIT_UNREACHABLE,
                ("start one with `clarion serve`, or pass --server URL / set CLARION_SERVER",),
            ) from exc

    @contextmanager
    def _reporting(self, label: str) -> Iterator[None]:
        """While a request is in flight, tell `progress` every `progress_every` seconds."""
        if self._progress is None:
            yield
            return
        report, every = self._progress, self._progress_every
        done = threading.Event()
        started = time.monotonic()

        def tick() -> None:
            while not done.wait(every):
                report(label, time.monotonic() - started)

        ticker = threading.Thread(target=tick, name="clarion-progress", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()

    def json(self, method: str, path: str, *, json: Any = None, what: str | None = None) -> Any:
        response = self.call(method, path, json=json, what=what)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise CliError(
                f"{what or path}: the server replied with something that is not JSON",
                EXIT_SERVER_ERROR,
            ) from exc

    # ------------------------------------------------------------------ contract routes

    def healthy(self) -> bool:
        try:
            return self._http.get(f"{self.base_url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def inbox(self) -> list[dict[str, Any]]:
        return list(self.json("GET", "/inbox", what="reading the inbox")["items"])

    def tasks(self) -> list[dict[str, Any]]:
        return list(self.json("GET", "/tasks", what="listing tasks")["tasks"])

    def create_task(self, title: str, description: str = "") -> dict[str, Any]:
        body = {"title": title, "description": description}
        return dict(self.json("POST", "/tasks", json=body, what="creating the task")["task"])

    def start_session(
        self, task_id: str, *, agent: str = "builtin", prompt: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"agent": agent}
        if prompt is not None:
            body["prompt"] = prompt
        reply = self.json(
            "POST", f"/tasks/{task_id}/task-sessions", json=body, what="starting the session"
        )
        return dict(reply["session"])

    def session(self, session_id: str) -> dict[str, Any]:
        return dict(
            self.json("GET", f"/task-sessions/{session_id}", what="reading the session")["session"]
        )

    def sessions(self, task_id: str) -> list[dict[str, Any]]:
        reply = self.json("GET", f"/tasks/{task_id}/task-sessions", what="listing sessions")
        return list(reply["sessions"])

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The whole transcript, following `next` page by page."""
        out: list[dict[str, Any]] = []
        after: str | None = None
        while True:
            query = f"?limit=500&after={after}" if after else "?limit=500"
            page = self.json(
                "GET", f"/task-sessions/{session_id}/messages{query}", what="reading messages"
            )
            out.extend(page["messages"])
            after = page.get("next")
            if not after:
                return out

    def bundle(self, pending_id: str) -> dict[str, Any]:
        return dict(self.json("GET", f"/clarification/{pending_id}", what="reading the question"))

    def resend(self, pending_id: str) -> dict[str, Any]:
        return dict(
            self.json(
                "POST", f"/clarification/{pending_id}/resend", what="sending the answer again"
            )
        )

    def respond(self, pending_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(
            self.json(
                "POST",
                f"/clarification/{pending_id}/respond",
                json=body,
                what="sending the answer",
            )
        )

    def permission(self, message_id: str) -> dict[str, Any]:
        return dict(
            self.json("GET", f"/permission/{message_id}", what="reading the permission request")
        )

    def decide_permission(self, message_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(
            self.json(
                "POST",
                f"/permission/{message_id}/respond",
                json=body,
                what="sending the decision",
            )
        )

    # ------------------------------------------------------------------ WebSocket

    @contextmanager
    def websocket(self) -> Iterator[ClientConnection]:
        parts = urlsplit(self.base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        url = urlunsplit((scheme, parts.netloc, f"{parts.path}/api/v1/ws", "", ""))
        try:
            ws = connect(url, additional_headers=self._headers, open_timeout=10)
        except InvalidStatus as exc:
            status = exc.response.status_code
            text = exc.response.body.decode(errors="replace") if exc.response.body else ""
            raise api_error(status, text, "opening the event stream") from exc
        except (OSError, TimeoutError, WebSocketException) as exc:
            raise CliError(
                f"cannot reach the Clarion server at {self.base_url} ({exc})",
                EXIT_UNREACHABLE,
                ("start one with `clarion serve`, or pass --server URL / set CLARION_SERVER",),
            ) from exc
        with ws:
            yield ws
