"""Receivers on loopback for what a server sends out, so a benchmark can count it: a Slack
Web API stand-in and an OTLP/HTTP trace collector that accepts and discards.

Each is a threaded HTTP server in the benchmark's process. Their own CPU is the benchmark's,
not the server's: the figures read the server's process alone. Each counts what arrived and
lets a caller wait, event-driven, until a count is reached.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SLACK_CHANNEL = "C0BENCH"
SLACK_BOT_TOKEN = "xoxb-bench-token"
SLACK_SIGNING_SECRET = "bench-signing-secret-0123456789"


class Counts:
    """Named counters that callers can wait on."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._counts: Counter[str] = Counter()

    def add(self, **amounts: int) -> None:
        with self._changed:
            self._counts.update(amounts)
            self._changed.notify_all()

    def get(self, name: str) -> int:
        with self._changed:
            return self._counts[name]

    def wait_for(self, wanted: dict[str, int], timeout: float) -> None:
        """Until every `wanted` count is reached (TimeoutError past `timeout`)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while any(self._counts[k] < v for k, v in wanted.items()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"wanted {wanted}, have {dict(self._counts)}")
                self._changed.wait(left)


class SlackStandIn:
    """Answers `chat.postMessage` with a new message `ts` and every other method with ok."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.counts = Counts()
        self._ts = 0
        self._lock = threading.Lock()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def answer(self, method: str) -> dict[str, Any]:
        self.counts.add(**{method: 1})
        if method == "chat.postMessage":
            with self._lock:
                self._ts += 1
                ts = self._ts
            return {"ok": True, "channel": SLACK_CHANNEL, "ts": f"1700000000.{ts:06d}"}
        return {"ok": True}

    def config(self, events: tuple[str, ...]) -> str:
        """The `[notifications.slack]` table of a server posting `events` here."""
        return (
            "[notifications.slack]\n"
            'bot_token_env = "SLACK_BOT_TOKEN"\n'
            'signing_secret_env = "SLACK_SIGNING_SECRET"\n'
            f'channel = "{SLACK_CHANNEL}"\n'
            f'api_url = "{self.api_url}"\n'
            f"events = {json.dumps(list(events))}\n"
        )

    @staticmethod
    def env() -> dict[str, str]:
        return {"SLACK_BOT_TOKEN": SLACK_BOT_TOKEN, "SLACK_SIGNING_SECRET": SLACK_SIGNING_SECRET}


class OtlpSink:
    """Accepts OTLP/HTTP trace exports (protobuf) and counts requests, bytes and spans."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.counts = Counts()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def receive(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = sum(
            len(scope.spans)
            for resource in request.resource_spans
            for scope in resource.scope_spans
        )
        self.counts.add(exports=1, bytes=len(body), spans=spans)

    def config(self) -> str:
        return f'[telemetry]\nexporter = "otlp"\nendpoint = "{self.endpoint}"\n'


def _handler(reply: Any) -> type[BaseHTTPRequestHandler]:
    """A POST handler whose body `reply(path, body)` turns into a JSON answer (None: empty)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the OTLP exporter's session expects

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            answer = reply(self.path, self.rfile.read(length))
            # No answer: an empty protobuf, OTLP's "all accepted".
            body = b"" if answer is None else json.dumps(answer).encode()
            kind = "application/x-protobuf" if answer is None else "application/json"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def _serving(reply: Any) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(reply))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def slack_stand_in() -> Iterator[SlackStandIn]:
    holder: list[SlackStandIn] = []
    with _serving(lambda path, _body: holder[0].answer(path.rsplit("/", 1)[-1])) as port:
        holder.append(SlackStandIn(port))
        yield holder[0]


@contextlib.contextmanager
def otlp_sink() -> Iterator[OtlpSink]:
    holder: list[OtlpSink] = []
    with _serving(lambda _path, body: holder[0].receive(body)) as port:
        holder.append(OtlpSink(port))
        yield holder[0]
