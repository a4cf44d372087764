"""A small synchronous client for Clarion's HTTP API and WebSocket, used by the CLI and the demo.

Every failure comes out as a CliError with the exit code of docs/cli.md, so commands never
print tracebacks for what a server can be expected to say.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from clarion.cli.errors import EXIT_SERVER_ERROR, EXIT_UNREACHABLE, CliError, api_error

DEFAULT_SERVER = "http://127.0.0.1:8787"


class ClarionClient:
    """One server at `base_url`; `token` is sent as a Bearer token when access control is on."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        # Answering a detached question waits for the agent to accept the resume prompt, so
        # the default read timeout is generous.
        self._http = httpx.Client(
            base_url=f"{self.base_url}/api/v1", headers=self._headers, timeout=timeout
        )

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
            return self._http.request(method, path, json=json)
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
            return httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

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
