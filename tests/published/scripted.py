"""What every scripted model server shares: the script a test writes, the recorded requests, and
an HTTP server on 127.0.0.1 on its own thread.

A test's `Script` decides what the "model" answers the agent's main conversation: call a tool
with given arguments, reply with text quoting a tool result, fail with an HTTP status. Each
server (model_server.py for the Anthropic Messages API, gemini_server.py for the Gemini API,
openai_server.py for OpenAI's Responses and Chat Completions APIs) translates between its wire
format and these few types, and reads each request into a `Conversation` so that what the tests
ask of the record (tool results, prompts received) is answered once, here.

One server can outlive a test: `play(script)` swaps the script and forgets the record, so a
worker starts one server per API and each test plays its own script on it.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

RESUME_MARK = "You previously asked the user:"

# Fields the agents' JSON side requests look for (next-speaker checks, model routing); each
# reads its own and ignores the others.
SIDE_JSON = {
    "reasoning": "scripted",
    "next_speaker": "user",
    "model_choice": "flash",
    "complexity_reasoning": "scripted",
    "complexity_score": 10,
}


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
class ToolResult:
    tool_use_id: str
    name: str  # the tool the matching call named
    text: str
    is_error: bool  # always False where the API has no such flag (OpenAI's)


@dataclass(frozen=True)
class Turn:
    """The part of a main request a script looks at: the last user message."""

    prompt: str  # its text ("" when it carries tool results)
    tool_results: list[ToolResult]
    body: dict[str, Any]
    tool_names: list[str] = field(default_factory=list)  # the tools offered to the model


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


@dataclass(frozen=True)
class Conversation:
    """One main request, read out of its wire format."""

    user_texts: list[list[str]]  # the text blocks of each user message, oldest first
    tool_results: list[ToolResult]  # every tool result in the history, oldest first
    turn: Turn  # what the script is asked about


class Exchange:
    """One request being answered: the answer helpers every wire format uses."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._handler = handler

    def json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self.send(status, "application/json", json.dumps(payload).encode(), headers)

    def send(
        self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self._handler.send_response(status)
        self._handler.send_header("content-type", content_type)
        self._handler.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self._handler.send_header(name, value)
        self._handler.end_headers()
        self._handler.wfile.write(data)

    def stream(self, chunks: Iterable[str]) -> None:
        """A server-sent event stream, written as it is produced; the connection closes at its
        end, as the real APIs' streams do."""
        self._handler.send_response(200)
        self._handler.send_header("content-type", "text/event-stream")
        self._handler.send_header("cache-control", "no-cache")
        self._handler.send_header("connection", "close")
        self._handler.end_headers()
        for chunk in chunks:
            self._handler.wfile.write(chunk.encode())
            self._handler.wfile.flush()
        self._handler.close_connection = True


class ScriptedServer(ABC):
    """Runs on its own thread; `requests` holds every request body (JSON) in arrival order and
    `paths` their paths."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._plays = 0
        self._prefix = ""  # every path of the current play starts with it
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL of the current play: an agent left over from an earlier one (its
        process tree dies a moment after its server) gets 404s and is not recorded."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}{self._prefix}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def play(self, script: Script) -> Self:
        """Start over with `script` at a new base URL: the record so far is forgotten."""
        with self._lock:
            self._plays += 1
            self._prefix = f"/play{self._plays}"
            self.script = script
            self.requests.clear()
            self.paths.clear()
        return self

    # ------------------------------------------------------------------ each wire format

    @abstractmethod
    def is_main(self, body: dict[str, Any]) -> bool:
        """Whether a request belongs to the agent's main loop (it offers tools); the agent's
        side requests (titles, summaries, checks) are answered without the script."""

    @abstractmethod
    def conversation(self, body: dict[str, Any]) -> Conversation: ...

    @abstractmethod
    def serve_get(self, exchange: Exchange, path: str) -> None: ...

    @abstractmethod
    def serve_post(self, exchange: Exchange, path: str, body: dict[str, Any]) -> None: ...

    # ------------------------------------------------------------------ what tests read

    def record(self) -> list[dict[str, Any]]:
        """Every request of the current play: its path and body."""
        with self._lock:
            return [{"path": p, "body": b} for p, b in zip(self.paths, self.requests, strict=True)]

    def main_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if self.is_main(r)]

    def tool_results(self) -> list[ToolResult]:
        """Each tool result the agent sent, once (later requests repeat the history)."""
        seen: dict[str, ToolResult] = {}
        for body in self.main_requests():
            for index, result in enumerate(self.conversation(body).tool_results):
                seen.setdefault(result.tool_use_id or f"#{index}:{result.name}", result)
        return list(seen.values())

    def prompts_containing(self, needle: str) -> list[str]:
        """Distinct user text blocks containing `needle` across all main requests."""
        seen: list[str] = []
        for body in self.main_requests():
            for texts in self.conversation(body).user_texts:
                for text in texts:
                    if needle in text and text not in seen:
                        seen.append(text)
        return seen

    def user_messages_containing(self, needle: str) -> int:
        """How many user messages in the longest conversation sent contain `needle`: a prompt
        delivered twice would appear twice in the history the agent sends back."""
        counts = [
            sum(any(needle in t for t in texts) for texts in self.conversation(body).user_texts)
            for body in self.main_requests()
        ]
        return max(counts, default=0)

    def offered_tools(self) -> set[str]:
        """Every tool name the agent offered the model in its main requests."""
        return {n for body in self.main_requests() for n in self.conversation(body).turn.tool_names}

    # ------------------------------------------------------------------ serving

    def answer(self, body: dict[str, Any], side: Reply) -> Reply:
        """The script's reply to a main request; `side` for any other."""
        if not self.is_main(body):
            return side
        with self._lock:
            script = self.script
        return script(self.conversation(body).turn)

    def _record(self, raw_path: str, body: dict[str, Any]) -> str | None:
        """The path within the current play, recorded; None for a request outside it."""
        path = raw_path.split("?")[0]
        with self._lock:
            if not path.startswith(self._prefix + "/"):
                return None
            path = path.removeprefix(self._prefix)
            self.paths.append(path)
            self.requests.append(body)
        return path

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                path = server._record(self.path, {})
                if path is None:
                    Exchange(self).json(404, {"error": "not this play's"})
                else:
                    server.serve_get(Exchange(self), path)

            def do_HEAD(self) -> None:
                Exchange(self).json(200, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if not isinstance(body, dict):
                    body = {}
                path = server._record(self.path, body)
                if path is None:
                    Exchange(self).json(404, {"error": "not this play's"})
                else:
                    server.serve_post(Exchange(self), path, body)

        return Handler


def sse(data: dict[str, Any] | str, event: str | None = None) -> str:
    """One server-sent event."""
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
