"""A scripted stand-in for the Gemini API (generateContent, streamGenerateContent with SSE) on
127.0.0.1, for driving Gemini CLI through GOOGLE_GEMINI_BASE_URL.

The same `Script`s as model_server.py decide the main conversation (a request that offers
function declarations). Side requests (next-speaker checks, routing, token counts) get a minimal
answer: a JSON object for the ones that ask for JSON, a short text otherwise.
"""

from __future__ import annotations

import json
from typing import Any

from tests.published.scripted import (
    SIDE_JSON,
    Conversation,
    Exchange,
    Reply,
    ScriptedServer,
    ToolResult,
    Turn,
)


class GeminiServer(ScriptedServer):
    """generateContent and streamGenerateContent (server-sent events), as GOOGLE_GEMINI_BASE_URL."""

    def is_main(self, body: dict[str, Any]) -> bool:
        return any(t.get("functionDeclarations") for t in body.get("tools") or [])

    def conversation(self, body: dict[str, Any]) -> Conversation:
        contents = body.get("contents", [])
        last = contents[-1] if contents else {}
        return Conversation(
            user_texts=[_texts(c) for c in contents if c.get("role") == "user"],
            tool_results=_function_responses(contents),
            turn=Turn(
                prompt="\n".join(_texts(last)),
                tool_results=_function_responses([last]),
                body=body,
                tool_names=[
                    str(d.get("name"))
                    for t in body.get("tools") or []
                    for d in t.get("functionDeclarations") or []
                ],
            ),
        )

    def serve_get(self, exchange: Exchange, path: str) -> None:
        exchange.json(404, _error(404, "not scripted"))

    def serve_post(self, exchange: Exchange, path: str, body: dict[str, Any]) -> None:
        if path.endswith(":countTokens"):
            exchange.json(200, {"totalTokens": 10})
            return
        if not (path.endswith(":generateContent") or path.endswith(":streamGenerateContent")):
            exchange.json(404, _error(404, f"{path} is not scripted"))
            return
        config = body.get("generationConfig") or {}
        wants_json = config.get("responseJsonSchema") or config.get("responseSchema")
        side = Reply(text=json.dumps(SIDE_JSON) if wants_json else "Clarion test")
        reply = self.answer(body, side)
        if reply.status != 200:
            exchange.json(reply.status, _error(reply.status, reply.text or "scripted failure"))
            return
        payload = _response(reply)
        if path.endswith(":streamGenerateContent"):
            # One event holding the whole answer, as the API sends a short one.
            data = f"data: {json.dumps(payload)}\r\n\r\n".encode()
            exchange.send(200, "text/event-stream", data)
        else:
            exchange.json(200, payload)


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
