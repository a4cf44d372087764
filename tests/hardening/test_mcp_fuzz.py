"""Malformed JSON-RPC at a session's MCP endpoint: every request gets an HTTP 4xx or a JSON-RPC
error, nothing is logged as a crash, and the endpoint keeps serving well-formed clients."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

from tests.hardening.mcp_rig import McpRig, mcp_rig, messages_of, rpc

JUNK: list[Any] = [None, 0, -1, 2**70, 1.5, True, "", "x" * 200, [], {}, [1, {"a": []}]]


def tool_call(id_: Any, arguments: Any) -> bytes:
    params = {"name": "ask_user_question", "arguments": arguments}
    message = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def raw_bodies(rng: random.Random) -> list[bytes]:
    """Fixed-seed malformed JSON-RPC: broken JSON, wrong envelope fields, and well-formed
    envelopes whose tool arguments are wrong in every way (none is a valid question, which
    would wait for an answer)."""
    bodies = [b"", b"{", b"null", b"[]", b"[1, 2]", b"\xff\xfe\x00", b"NaN", b'"text"']
    bodies.append(("[" * 20_000 + "]" * 20_000).encode())
    deep = "[" * 5_000 + "]" * 5_000
    head = '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
    bodies.append((head + deep + "}").encode())
    bodies.append(tool_call(1, json.loads("[" * 500 + "]" * 500)))
    for junk in JUNK:
        bad = junk if not (isinstance(junk, str) and junk) else ""  # never a valid label
        bodies += [
            tool_call(2, junk),
            tool_call(3, {"questions": junk}),
            tool_call(4, {"questions": [junk]}),
            tool_call(5, {"questions": [{"prompt": "x", "options": junk}]}),
            tool_call(6, {"questions": [{"prompt": junk, "options": [{"label": bad}] * 3}]}),
        ]
    methods = [
        "initialize",
        "tools/list",
        "tools/call",
        "ping",
        "nope",
        "notifications/cancelled",
        "notifications/progress",
        "resources/list",
        "prompts/get",
        "completion/complete",
    ]
    for _ in range(80):
        message: dict[str, Any] = {"jsonrpc": "2.0" if rng.random() < 0.85 else rng.choice(JUNK)}
        if rng.random() < 0.8:
            message["id"] = rng.randrange(1000) if rng.random() < 0.7 else rng.choice(JUNK)
        message["method"] = rng.choice(methods) if rng.random() < 0.9 else rng.choice(JUNK)
        if rng.random() < 0.8:
            message["params"] = rng.choice(
                [
                    {"name": rng.choice(["other", 3, None]), "arguments": rng.choice(JUNK)},
                    {"requestId": rng.choice(JUNK), "reason": rng.choice(JUNK)},
                    {"progressToken": rng.choice(JUNK), "progress": rng.choice(JUNK)},
                    rng.choice(JUNK),
                ]
            )
        body = json.dumps([message, message] if rng.random() < 0.15 else message).encode()
        if rng.random() < 0.1:
            body = body[: rng.randrange(len(body) + 1)]
        bodies.append(body)
    return bodies


def crashes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.exc_info is not None or r.levelno >= logging.ERROR
    ]


def answered(status: int, messages: list[dict[str, Any]]) -> bool:
    if 400 <= status < 500:
        return True
    return status in (200, 202) and all("error" in m or "result" in m for m in messages)


async def still_serves(rig: McpRig) -> None:
    session = await rig.initialize()
    response = await rig.post(rpc(9, "tools/list", {}), session)
    assert messages_of(response)[0]["result"]["tools"][0]["name"] == "ask_user_question"


async def test_malformed_json_rpc_never_crashes_the_endpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(1808)
    caplog.set_level(logging.INFO)
    async with mcp_rig(tmp_path) as rig:
        session = await rig.initialize()
        for body in raw_bodies(rng):
            for mcp_session in (None, session):
                response = await rig.client.post(
                    rig.path,
                    content=body,
                    headers={**rig.headers(mcp_session), "Content-Type": "application/json"},
                )
                assert response.status_code < 500, (body[:200], response.text)
                try:
                    messages = messages_of(response)
                except ValueError:
                    messages = []
                assert answered(response.status_code, messages), (body[:200], response.text)
        await still_serves(rig)
    assert crashes(caplog) == []


async def test_protocol_misuse_gets_http_errors_not_crashes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with mcp_rig(tmp_path) as rig:
        session = await rig.initialize()
        plain = {"X-Clarion-Token": rig.secret}
        attempts = [
            ("POST", {**plain, "Content-Type": "text/plain"}, b"{}"),  # wrong content type
            ("POST", {**plain, "Content-Type": "application/json"}, b"{}"),  # no Accept
            (
                "POST",
                {**rig.headers("no-such-session"), "Content-Type": "application/json"},
                json.dumps(rpc(1, "tools/list", {})).encode(),
            ),
            ("GET", rig.headers("no-such-session"), b""),
            ("DELETE", rig.headers("no-such-session"), b""),
            ("PUT", rig.headers(session), b"{}"),
        ]
        for method, headers, body in attempts:
            response = await rig.client.request(method, rig.path, headers=headers, content=body)
            assert 400 <= response.status_code < 500, (method, headers, response.text)
        await still_serves(rig)
    assert crashes(caplog) == []
