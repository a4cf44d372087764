"""A stand-in for Slack on loopback: a small threaded HTTP server that answers the Web API
methods Clarion calls and records every call (as bolt-python's own tests do), and a helper
that signs interaction payloads the way Slack does, to replay the buttons Clarion posted."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode

from slack_sdk.signature import SignatureVerifier

SIGNING_SECRET = "test-signing-secret"
BOT_TOKEN = "xoxb-test-token"
CHANNEL_ID = "C0QUESTIONS"
CHANNEL_NAME = "questions"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str


@dataclass
class FakeSlack:
    """Records calls; `fail[method] = "channel_not_found"` makes that method answer ok:false."""

    calls: list[Call] = field(default_factory=list)
    fail: dict[str, str] = field(default_factory=dict)
    port: int = 0
    # Where `apps.connections.open` sends a Socket Mode client (the WebSocket stand-in).
    socket_url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _changed: threading.Condition = field(init=False)
    _ts: int = 0

    def __post_init__(self) -> None:
        self._changed = threading.Condition(self._lock)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def answer(self, method: str, args: dict[str, Any], token: str) -> dict[str, Any]:
        with self._changed:
            self.calls.append(Call(method, args, token))
            self._changed.notify_all()
            if method in self.fail:
                return {"ok": False, "error": self.fail[method]}
            if method == "chat.postMessage":
                self._ts += 1
                return {"ok": True, "channel": CHANNEL_ID, "ts": f"1700000000.{self._ts:06d}"}
            if method == "apps.connections.open":
                return {"ok": True, "url": self.socket_url}
            if method == "conversations.info":
                if args.get("channel") != CHANNEL_ID:
                    return {"ok": False, "error": "channel_not_found"}
                return {"ok": True, "channel": self._channel()}
            if method == "conversations.list":
                return {
                    "ok": True,
                    "channels": [self._channel()],
                    "response_metadata": {"next_cursor": ""},
                }
            if method == "auth.test":
                if token != BOT_TOKEN:
                    return {"ok": False, "error": "invalid_auth"}
                return {"ok": True, "team": "Test team", "user": "clarion", "bot_id": "B1"}
            return {"ok": True}

    @staticmethod
    def _channel() -> dict[str, Any]:
        """The one channel this Slack has, the bot a member of it."""
        return {"id": CHANNEL_ID, "name": CHANNEL_NAME, "is_private": False, "is_member": True}

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(
        self,
        method: str,
        count: int = 1,
        where: Callable[[Call], bool] = lambda c: True,
        timeout: float = 60.0,
    ) -> list[Call]:
        """Event-driven: returns as soon as `count` matching calls were recorded."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [c for c in self.calls if c.method == method and where(c)]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{count} {method} call(s) not seen in {timeout} s; calls: "
                        f"{[c.method for c in self.calls]}"
                    )
                self._changed.wait(left)


@contextmanager
def fake_slack() -> Iterator[FakeSlack]:
    slack = FakeSlack()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode()
            if "json" in (self.headers.get("Content-Type") or ""):
                args = json.loads(raw or "{}")
            else:
                args = {k: v[0] for k, v in parse_qs(raw).items()}
            for key in ("blocks", "view"):
                if isinstance(args.get(key), str):
                    args[key] = json.loads(args[key])
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            method = self.path.rsplit("/", 1)[-1]
            body = json.dumps(slack.answer(method, args, token)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    slack.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield slack
    finally:
        server.shutdown()
        server.server_close()


def signed(
    payload: Any,
    *,
    secret: str = SIGNING_SECRET,
    timestamp: int | None = None,
    raw_payload: str | None = None,
) -> tuple[bytes, dict[str, str]]:
    """A form-encoded interaction body and the headers Slack would send with it."""
    text = raw_payload if raw_payload is not None else json.dumps(payload)
    body = urlencode({"payload": text}).encode()
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return body, {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": str(signature),
    }


def click(
    posted: Call,
    action_id: str,
    *,
    user: str = "U0ALICE",
    trigger: str = "trig-1",
    action_ts: str = "1700000001.000001",
) -> dict[str, Any]:
    """The `block_actions` payload of clicking the element `action_id` of a posted message."""
    actions = next(b for b in posted.args["blocks"] if b["type"] == "actions")
    element = next(e for e in actions["elements"] if e["action_id"] == action_id)
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "trigger_id": trigger,
        "container": {
            "type": "message",
            "message_ts": "1700000000.000001",
            "channel_id": CHANNEL_ID,
        },
        "channel": {"id": CHANNEL_ID},
        "message": {"ts": "1700000000.000001", "blocks": posted.args["blocks"]},
        "actions": [{**element, "block_id": actions["block_id"], "action_ts": action_ts}],
    }


def option_action(posted: Call, option_id: str) -> str:
    actions = next(b for b in posted.args["blocks"] if b["type"] == "actions")
    for element in actions["elements"]:
        if json.loads(element["value"]).get("o") == option_id:
            return str(element["action_id"])
    raise AssertionError(f"no button for {option_id}")
