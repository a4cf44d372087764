"""The CLI waits longer than the server bounds its own waits, so the server's error is what a
person sees when an agent hangs; a long request shows progress on stderr meanwhile."""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from clarion.agents.runtime import AcpRuntime
from clarion.cli.connection import waiting
from clarion.client.errors import EXIT_SERVER_ERROR, CliError
from clarion.client.http import HTTP_TIMEOUT, ClarionClient
from clarion.config import Timeouts


def test_the_client_outwaits_every_bounded_wait_of_the_server() -> None:
    start = inspect.signature(AcpRuntime.__init__).parameters["start_timeout"].default
    defaults = Timeouts()
    # Answering a detached question may start the agent, then wait for it to accept the
    # resume prompt, then persist: all of that must fit inside one client request.
    longest = start + defaults.resume_accept + defaults.persist
    assert longest < HTTP_TIMEOUT
    with ClarionClient("http://127.0.0.1:9") as client:
        assert client._http.timeout.read == HTTP_TIMEOUT
        assert client._http.timeout.connect is not None and client._http.timeout.connect <= 10


SLOW_S = 1.2
AGENT_ERROR = {
    "error": {"code": "agent_start_failed", "message": "agent did not start", "retryable": True}
}


class SlowFailingAgent(BaseHTTPRequestHandler):
    """Replies like a server whose agent hung: a while later, its own 500."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(SLOW_S)
        body = json.dumps(AGENT_ERROR).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def slow_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowFailingAgent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_slow_server_error_is_shown_with_progress_meanwhile(slow_server: str) -> None:
    notes: list[tuple[str, float]] = []
    client = ClarionClient(
        slow_server, progress=lambda w, s: notes.append((w, s)), progress_every=0.2
    )
    with client, pytest.raises(CliError) as caught:
        client.respond("p1", {"rejected": True})
    assert caught.value.exit_code == EXIT_SERVER_ERROR
    assert "agent did not start (agent_start_failed, HTTP 500)" in caught.value.message
    assert "did not answer in time" not in caught.value.message
    assert len(notes) >= 2  # several notes while it waited, each later than the one before
    assert all(what == "sending the answer" for what, _ in notes)
    assert [s for _, s in notes] == sorted(s for _, s in notes)


def test_a_quick_request_shows_no_progress(slow_server: str) -> None:
    notes: list[float] = []
    client = ClarionClient(slow_server, progress=lambda w, s: notes.append(s), progress_every=30)
    with client, pytest.raises(CliError):
        client.respond("p1", {"rejected": True})
    assert notes == []


def test_progress_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    waiting("sending the answer", 10.4)
    out = capsys.readouterr()
    assert out.out == ""
    assert "still sending the answer (10s" in out.err
