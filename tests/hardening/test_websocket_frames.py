"""The WebSocket answers every malformed frame with an error envelope (or closes with a close
frame), never a traceback, and the server stays healthy for the next client."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from tests.e2e.harness import ServerProcess
from tests.hardening.conftest import assert_no_traceback

pytestmark = pytest.mark.e2e


def reply(ws: ClientConnection) -> dict[str, Any]:
    """The next response or error envelope, skipping notifications from other tests."""
    while True:
        body = json.loads(ws.recv(timeout=10))
        if body["type"] != "notification":
            return dict(body)


def ping(ws: ClientConnection) -> None:
    ws.send(json.dumps({"type": "request", "id": "p", "action": "ping", "payload": {}}))
    answer = reply(ws)
    assert answer["type"] == "response" and answer["payload"] == {"pong": True}, answer


def test_binary_frame_gets_an_error_envelope_and_the_socket_stays_open(
    server: ServerProcess,
) -> None:
    with server.websocket() as ws:
        ws.send(b'{"type": "request", "action": "ping"}')
        answer = reply(ws)
        assert answer["type"] == "error"
        assert answer["payload"]["code"] == "invalid_frame"
        assert answer["payload"]["retryable"] is False
        ping(ws)  # still usable
    assert_no_traceback(server)


def test_deeply_nested_text_frame_gets_an_error_envelope(server: ServerProcess) -> None:
    with server.websocket() as ws:
        ws.send("[" * 50_000 + "]" * 50_000)
        answer = reply(ws)
        assert answer["type"] == "error"
        assert answer["payload"]["code"] == "invalid_json"
        ping(ws)
    assert_no_traceback(server)


def malformed_frames(rng: random.Random) -> list[str | bytes]:
    """A fixed-seed mix of binary junk, broken JSON, wrong types in every envelope field."""
    junk_values: list[Any] = [None, 0, -1, 1.5, True, "", "x" * 300, [], {}, [1, {"a": []}]]
    frames: list[str | bytes] = [b"", b"\x00\xff\xfe", bytes(rng.randrange(256) for _ in range(64))]
    frames += ["", " ", "{", "}", "null", "[]", '"text"', "1e999", "NaN", '{"a": }']
    actions = ["subscribe", "unsubscribe", "task.subscribe", "session.list", "ping", "nope"]
    for _ in range(120):
        message: dict[str, Any] = {}
        for key in ("id", "type", "action", "payload"):
            roll = rng.random()
            if roll < 0.2:
                continue
            if key == "action" and roll < 0.7:
                message[key] = rng.choice(actions)
            elif key == "payload" and roll < 0.7:
                message[key] = {
                    k: rng.choice(junk_values) for k in rng.sample(["task_id", "session_id"], 2)
                }
            else:
                message[key] = rng.choice(junk_values)
        text = json.dumps(message)
        if rng.random() < 0.15:  # truncated
            text = text[: rng.randrange(len(text) + 1)]
        frames.append(text.encode() if rng.random() < 0.1 else text)
    return frames


def test_fuzzed_frames_never_break_the_server(server: ServerProcess) -> None:
    rng = random.Random(1804)
    with server.websocket() as conn:
        for frame in malformed_frames(rng):
            conn.send(frame)  # the socket never closes on any of these
            answer = reply(conn)
            assert answer["type"] in ("response", "error"), (frame, answer)
            if answer["type"] == "error":
                assert set(answer["payload"]) >= {"code", "message", "retryable"}
        ping(conn)
        # Invalid UTF-8 in a text frame is a protocol error: the server closes with 1007.
        conn.send(b"\xff\xfe{}", text=True)
        with pytest.raises(ConnectionClosed) as closed:
            reply(conn)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    with server.websocket() as fresh:
        ping(fresh)
    assert server.ok("GET", "/tasks") is not None
    assert_no_traceback(server)
