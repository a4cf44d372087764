"""A scripted stand-in for the Gemini API (generateContent, streamGenerateContent with SSE) on
127.0.0.1, for driving Gemini CLI through GOOGLE_GEMINI_BASE_URL.

The same `Script`s as model_server.py decide the main conversation (a request that offers
function declarations). Side requests (next-speaker checks, routing, token counts) get a minimal
answer: a JSON object for the ones that ask for JSON, a short text otherwise.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.published.model_server import Reply, Script, ToolResult, Turn

# Fields the CLI's JSON side requests look for; each reads its own and ignores the others.
_SIDE_JSON = {
    "reasoning": "scripted",
    "next_speaker": "user",
    "model_choice": "flash",
    "complexity_reasoning": "scripted",
    "complexity_score": 10,
}


class GeminiServer:
    """Runs on its own thread; `requests` holds every request body in arrival order."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> GeminiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def main_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if _is_main(r)]

    def tool_results(self) -> list[ToolResult]:
        """Each function response the agent sent, once (later requests repeat the history)."""
        seen: dict[tuple[int, str], ToolResult] = {}
        for body in self.main_requests():
            for index, result in enumerate(_function_responses(body.get("contents", []))):
                seen.setdefault((index, result.name), result)
        return list(seen.values())

    def prompts_containing(self, needle: str) -> list[str]:
        seen: list[str] = []
        for body in self.main_requests():
            for content in body.get("contents", []):
                if content.get("role") != "user":
                    continue
                for text in _texts(content):
                    if needle in text and text not in seen:
                        seen.append(text)
        return seen

    def user_messages_containing(self, needle: str) -> int:
        counts = [
            sum(
                any(needle in t for t in _texts(c))
                for c in body.get("contents", [])
                if c.get("role") == "user"
            )
            for body in self.main_requests()
        ]
        return max(counts, default=0)

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.paths.append(path)
            self.requests.append(body)

    def _answer(self, body: dict[str, Any]) -> Reply:
        config = body.get("generationConfig") or {}
        if not _is_main(body):
            if config.get("responseJsonSchema") or config.get("responseSchema"):
                return Reply(text=json.dumps(_SIDE_JSON))
            return Reply(text="Clarion test")
        contents = body.get("contents", [])
        last = contents[-1] if contents else {}
        return self.script(
            Turn(
                prompt="\n".join(_texts(last)),
                tool_results=_function_responses([last]),
                body=body,
            )
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                server._record(self.path, {})
                self._json(404, _error(404, "not scripted"))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                server._record(path, body)
                if path.endswith(":countTokens"):
                    self._json(200, {"totalTokens": 10})
                    return
                if not (
                    path.endswith(":generateContent") or path.endswith(":streamGenerateContent")
                ):
                    self._json(404, _error(404, f"{path} is not scripted"))
                    return
                reply = server._answer(body)
                if reply.status != 200:
                    self._json(reply.status, _error(reply.status, reply.text or "scripted failure"))
                    return
                payload = _response(reply)
                if path.endswith(":streamGenerateContent"):
                    data = f"data: {json.dumps(payload)}\r\n\r\n".encode()
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self._json(200, payload)

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _error(status: int, message: str) -> dict[str, Any]:
    names = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED"}
    return {"error": {"code": status, "message": message, "status": names.get(status, "INTERNAL")}}


def _response(reply: Reply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.text or not reply.tool:
        parts.append({"text": reply.text})
    if reply.tool:
        parts.append({"functionCall": {"name": reply.tool, "args": reply.tool_input}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-test",
    }


def _is_main(body: dict[str, Any]) -> bool:
    return any(t.get("functionDeclarations") for t in body.get("tools") or [])


def _texts(content: dict[str, Any]) -> list[str]:
    return [str(p["text"]) for p in content.get("parts", []) if isinstance(p, dict) and "text" in p]


def _function_responses(contents: list[dict[str, Any]]) -> list[ToolResult]:
    results: list[ToolResult] = []
    for content in contents:
        for part in content.get("parts", []):
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if not response:
                continue
            payload = response.get("response") or {}
            text = payload.get("output", payload.get("error"))
            results.append(
                ToolResult(
                    tool_use_id=str(response.get("id", "")),
                    name=str(response.get("name", "")),
                    text=text if isinstance(text, str) else json.dumps(payload),
                    is_error="error" in payload,
                )
            )
    return results
