"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for driving real agents.

Claude Code honours ANTHROPIC_BASE_URL, so with this server the published agent runs its real
loop while the test decides, through a `Script`, what the "model" answers: call a tool with given
arguments, reply with text quoting a tool result, fail with an HTTP status. Every request is
recorded so a test can assert what the agent sent the model (tool results, resume prompts).

Only the main conversation (a request that offers tools) follows the script; side requests the
agent makes on its own (titles, summaries, token counts) get a minimal answer.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RESUME_MARK = "You previously asked the user:"


@dataclass(frozen=True)
class Reply:
    """What the model answers one request: text, then optionally one tool call; or an error."""

    text: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    status: int = 200  # anything else answers an API error with this status

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool else "end_turn"


@dataclass(frozen=True)
class Turn:
    """The part of a main request a script looks at: the last user message."""

    prompt: str  # its text blocks (system reminders left out), "" when it carries tool results
    tool_results: list[ToolResult]
    body: dict[str, Any]

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name")) for t in self.body.get("tools", [])]


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    name: str  # the tool the matching tool_use called
    text: str
    is_error: bool


Script = Callable[[Turn], Reply]


def ask_then_quote(tool: str, tool_input: dict[str, Any], *, prefix: str = "Got: ") -> Script:
    """The usual script: any prompt makes the model call `tool`; a tool result comes back as
    `prefix` + its text (errors as `Tool error: ...`); a resume prompt is quoted back."""

    def play(turn: Turn) -> Reply:
        if turn.tool_results:
            result = turn.tool_results[-1]
            if result.is_error:
                return Reply(text=f"Tool error: {result.text}")
            return Reply(text=prefix + result.text)
        if RESUME_MARK in turn.prompt:
            return Reply(text="Resumed with: " + turn.prompt)
        return Reply(tool=tool, tool_input=tool_input)

    return play


class ModelServer:
    """Runs on its own thread; `requests` holds every request body (JSON) in arrival order."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # ------------------------------------------------------------------ what tests read

    def main_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if _is_main(r)]

    def tool_results(self) -> list[ToolResult]:
        """Each tool result the agent sent, once (later requests repeat the history)."""
        seen: dict[str, ToolResult] = {}
        for body in self.main_requests():
            for result in _tool_results(body):
                seen.setdefault(result.tool_use_id, result)
        return list(seen.values())

    def prompts_containing(self, needle: str) -> list[str]:
        """Distinct user text blocks containing `needle` across all main requests."""
        seen: list[str] = []
        for body in self.main_requests():
            for message in body.get("messages", []):
                if message.get("role") != "user":
                    continue
                for text in _texts(message):
                    if needle in text and text not in seen:
                        seen.append(text)
        return seen

    def user_messages_containing(self, needle: str) -> int:
        """How many user messages in the longest conversation sent contain `needle`: a prompt
        delivered twice would appear twice in the history the agent sends back."""
        counts = [
            sum(
                any(needle in t for t in _texts(m))
                for m in body.get("messages", [])
                if m.get("role") == "user"
            )
            for body in self.main_requests()
        ]
        return max(counts, default=0)

    # ------------------------------------------------------------------ serving

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.paths.append(path)
            self.requests.append(body)

    def _answer(self, body: dict[str, Any]) -> Reply:
        if not _is_main(body):
            return Reply(text="Clarion test")
        last = _last_user(body)
        turn = Turn(
            prompt="\n".join(_texts(last)) if last else "",
            tool_results=_tool_results(body, only_last=True),
            body=body,
        )
        return self.script(turn)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                server._record(self.path, {})
                if self.path.split("?")[0] == "/v1/models":
                    self._json(200, {"data": [], "has_more": False})
                else:
                    self._json(404, _error("not_found_error", "not scripted"))

            def do_HEAD(self) -> None:
                self._json(200, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                server._record(path, body)
                if path == "/v1/messages/count_tokens":
                    self._json(200, {"input_tokens": 10})
                    return
                if path != "/v1/messages":
                    self._json(404, _error("not_found_error", f"{path} is not scripted"))
                    return
                reply = server._answer(body)
                if reply.status != 200:
                    kind = "authentication_error" if reply.status == 401 else "api_error"
                    self._json(reply.status, _error(kind, reply.text or "scripted failure"))
                    return
                message_id = f"msg_{next(server._ids):06d}"
                tool_id = f"toolu_{next(server._ids):06d}"
                model = str(body.get("model", "claude-test"))
                if body.get("stream"):
                    self._stream(_events(reply, message_id, tool_id, model))
                else:
                    self._json(200, _message(reply, message_id, tool_id, model))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", "req_test")
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: Iterator[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for event in events:
                    chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()
                self.close_connection = True

        return Handler


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _usage() -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _content(reply: Reply, tool_id: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or not reply.tool:
        blocks.append({"type": "text", "text": reply.text})
    if reply.tool:
        blocks.append(
            {"type": "tool_use", "id": tool_id, "name": reply.tool, "input": reply.tool_input}
        )
    return blocks


def _message(reply: Reply, message_id: str, tool_id: str, model: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content(reply, tool_id),
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": _usage(),
    }


def _events(reply: Reply, message_id: str, tool_id: str, model: str) -> Iterator[dict[str, Any]]:
    start = {**_message(reply, message_id, tool_id, model), "content": [], "stop_reason": None}
    yield {"type": "message_start", "message": start}
    for index, block in enumerate(_content(reply, tool_id)):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": block["text"]},
            }
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            }
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            }
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    yield {"type": "message_stop"}


def _is_main(body: dict[str, Any]) -> bool:
    # The agent's own loop offers its tools; its side requests (titles, summaries) offer none.
    return bool(body.get("tools"))


def _last_user(body: dict[str, Any]) -> dict[str, Any] | None:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else None


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}]
    else:
        blocks = list(content or [])
    return [
        str(b.get("text", ""))
        for b in blocks
        if isinstance(b, dict)
        and b.get("type") == "text"
        and not str(b.get("text", "")).lstrip().startswith("<system-reminder>")
    ]


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        str(c.get("text", ""))
        for c in content or []
        if isinstance(c, dict) and c.get("type") == "text"
    )


def _tool_results(body: dict[str, Any], *, only_last: bool = False) -> list[ToolResult]:
    names: dict[str, str] = {}
    results: list[ToolResult] = []
    messages = body.get("messages", [])
    for position, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            if block.get("type") == "tool_result":
                if only_last and position != len(messages) - 1:
                    continue
                tool_use_id = str(block.get("tool_use_id"))
                results.append(
                    ToolResult(
                        tool_use_id=tool_use_id,
                        name=names.get(tool_use_id, ""),
                        text=_result_text(block),
                        is_error=bool(block.get("is_error")),
                    )
                )
    return results
