"""Webhooks end to end: a real `clarion serve`, a real HTTP receiver on loopback, and a server
killed with SIGKILL while its receiver is down. Every queued delivery still arrives once the
receiver is back and the server restarted, each delivery id at least once, signed."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ServerProcess, answer, wait_until
from tests.e2e.permission_steps import decide, wait_for_permission, wait_for_session_state
from tests.ports import free_port

pytestmark = pytest.mark.e2e

SECRET = "s3cret"


class Receiver:
    """Records every POST: headers and raw body."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[tuple[dict[str, str], bytes]] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    @contextmanager
    def running(self) -> Iterator[None]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.received.append((dict(self.headers.items()), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield
        finally:
            server.shutdown()
            server.server_close()

    def delivery_ids(self) -> set[str]:
        with self._lock:
            return {headers["X-Clarion-Delivery"] for headers, _ in self.received}


def _queued(db: Path) -> dict[str, str]:
    """delivery id -> event, read from the outbox table directly."""
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT id, event FROM webhook_deliveries").fetchall())


def test_every_delivery_arrives_after_a_receiver_outage_and_a_server_kill(tmp_path: Path) -> None:
    receiver = Receiver(free_port())
    config = tmp_path / "clarion.toml"
    config.write_text(f'[[webhooks]]\nurl = "{receiver.url}"\nsecret = "{SECRET}"\n')
    db = tmp_path / "clarion.db"
    workdir = tmp_path / "server"
    workdir.mkdir()
    server = ServerProcess(
        database_url=f"sqlite:///{db}",
        workdir=workdir,
        env={
            "CLARION_CONFIG": str(config),
            "CLARION_WEBHOOK_BACKOFF_S": "0.1",
            "CLARION_WEBHOOK_MAX_DELAY_S": "0.3",
            "CLARION_WEBHOOK_ATTEMPTS": "1000",
            "CLARION_CLARIFICATION_WAIT_S": "600",
        },
    )
    try:
        server.start()
        task_id = server.create_task("Pick a database")
        answered = server.start_session(task_id, "/scenario ask")
        pending = server.wait_for_bundle(answered)
        server.wait_for_state(pending, "active_live")
        assert server.respond(pending, answer("db", "postgres")).status_code == 200
        permitting = server.start_session(task_id, "/scenario permission")
        request = wait_for_permission(server, permitting)
        assert decide(server, request["id"], {"option_id": "allow"}).status_code == 200
        failing = server.start_session(task_id, "/scenario exit code=7 out of memory")
        wait_for_session_state(server, failing, "FAILED")
        waiting = server.start_session(task_id, "/scenario ask")
        server.wait_for_bundle(waiting)
        # The receiver is down: deliveries fail and are retried; the requests did not wait.
        expected = [
            "clarification.answered",
            "clarification.requested",
            "clarification.requested",
            "permission.decided",
            "permission.requested",
            "session.failed",
        ]
        wait_until(lambda: sorted(_queued(db).values()) == expected, what="six queued deliveries")
        with sqlite3.connect(db) as conn:
            wait_until(
                lambda: conn.execute(
                    "SELECT count(*) FROM webhook_deliveries WHERE attempts > 0"
                ).fetchone()[0],
                what="a failed attempt",
            )
        server.kill()
        before = _queued(db)

        with receiver.running():
            server.start()
            # The restart detached the waiting question: one more event, queued at startup.
            wait_until(
                lambda: "clarification.detached" in _queued(db).values(),
                what="the startup detach's delivery",
            )
            everything = set(_queued(db))
            wait_until(
                lambda: everything <= receiver.delivery_ids(),
                timeout=30,
                what="every queued delivery at the receiver",
            )
        assert set(before) <= receiver.delivery_ids()
        for headers, raw in receiver.received:
            body = json.loads(raw)
            digest = hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
            assert headers["X-Clarion-Signature"] == f"sha256={digest}"
            assert headers["X-Clarion-Delivery"] == body["delivery_id"]
            assert headers["X-Clarion-Event"] == body["event"]
            assert body["task"] == {"id": task_id, "title": "Pick a database"}
            assert body["link"].startswith(f"{server.url}/#/tasks/{task_id}/sessions/")
            assert body["text"].endswith(body["link"])
        arrived = {json.loads(raw)["event"] for _, raw in receiver.received}
        assert arrived == {*expected, "clarification.detached"}
        requested = [json.loads(raw) for _, raw in receiver.received]
        asks = [b for b in requested if b["event"] == "clarification.requested"]
        assert asks and asks[0]["text"].startswith("Agent asks in Pick a database: ")
    finally:
        server.stop()
