"""A local stand-in for Slack's Socket Mode endpoint, on the pattern of python-slack-sdk's own
mock Socket Mode server: a WebSocket server on loopback that greets a client with `hello`,
pushes envelopes the test gives it, and records the acknowledgements the client sends back."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from websockets.sync.server import ServerConnection, serve


@dataclass
class SocketModeStandIn:
    port: int = 0
    acks: list[dict[str, Any]] = field(default_factory=list)
    _connections: list[ServerConnection] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link/?ticket=test"

    def handle(self, connection: ServerConnection) -> None:
        connection.send(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "connection_info": {"app_id": "A0CLARION"},
                    "debug_info": {"host": "stand-in", "approximate_connection_time": 3600},
                }
            )
        )
        with self._changed:
            self._connections.append(connection)
            self._changed.notify_all()
        for message in connection:
            data = json.loads(message)
            if "envelope_id" in data:
                with self._changed:
                    self.acks.append(data)
                    self._changed.notify_all()

    def _wait(self, ready: Any, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (found := ready()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{what} not seen in {timeout} s")
                self._changed.wait(left)
            return found

    def wait_connected(self, timeout: float = 60.0) -> None:
        self._wait(lambda: bool(self._connections), timeout, "a Socket Mode connection")

    def send_interactive(self, envelope_id: str, payload: dict[str, Any], retry: int = 0) -> None:
        with self._changed:
            connection = self._connections[-1]
        connection.send(
            json.dumps(
                {
                    "envelope_id": envelope_id,
                    "type": "interactive",
                    "accepts_response_payload": True,
                    "retry_attempt": retry,
                    "retry_reason": "timeout" if retry else "",
                    "payload": payload,
                }
            )
        )

    def wait_ack(self, envelope_id: str, timeout: float = 60.0) -> dict[str, Any]:
        found: dict[str, Any] = self._wait(
            lambda: next((a for a in self.acks if a["envelope_id"] == envelope_id), None),
            timeout,
            f"the acknowledgement of {envelope_id}",
        )
        return found


@contextmanager
def socket_mode_stand_in() -> Iterator[SocketModeStandIn]:
    stand_in = SocketModeStandIn()
    server = serve(stand_in.handle, "127.0.0.1", 0)
    stand_in.port = server.socket.getsockname()[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
