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
from collections.abc import Iterator
from typing import Any

from tests.published.scripted import (
    RESUME_MARK,
    Conversation,
    Exchange,
    Reply,
    Script,
    ScriptedServer,
    ToolResult,
    Turn,
    ask_then_quote,
    sse,
)

__all__ = ["RESUME_MARK", "ModelServer", "Reply", "Script", "ToolResult", "Turn", "ask_then_quote"]


class ModelServer(ScriptedServer):
    """The Anthropic Messages API: `POST /v1/messages`, streamed or not."""

    def __init__(self, script: Script) -> None:
        super().__init__(script)
        self._ids = itertools.count(1)

    def is_main(self, body: dict[str, Any]) -> bool:
        # The agent's own loop offers its tools; its side requests (titles, summaries) offer none.
        return bool(body.get("tools"))

    def conversation(self, body: dict[str, Any]) -> Conversation:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        last = users[-1] if users else None
        return Conversation(
            user_texts=[_texts(m) for m in users],
            tool_results=_tool_results(body),
            turn=Turn(
                prompt="\n".join(_texts(last)) if last else "",
                tool_results=_tool_results(body, only_last=True),
                body=body,
                tool_names=[str(t.get("name")) for t in body.get("tools", [])],
            ),
        )

    def serve_get(self, exchange: Exchange, path: str) -> None:
        if path == "/v1/models":
            exchange.json(200, {"data": [], "has_more": False}, _HEADERS)
        else:
            exchange.json(404, _error("not_found_error", "not scripted"), _HEADERS)

    def serve_post(self, exchange: Exchange, path: str, body: dict[str, Any]) -> None:
        if path == "/v1/messages/count_tokens":
            exchange.json(200, {"input_tokens": 10}, _HEADERS)
            return
        if path != "/v1/messages":
            exchange.json(404, _error("not_found_error", f"{path} is not scripted"), _HEADERS)
            return
        reply = self.answer(body, Reply(text="Clarion test"))
        if reply.status != 200:
            kind = "authentication_error" if reply.status == 401 else "api_error"
            exchange.json(reply.status, _error(kind, reply.text or "scripted failure"), _HEADERS)
            return
        message_id = f"msg_{next(self._ids):06d}"
        tool_id = f"toolu_{next(self._ids):06d}"
        model = str(body.get("model", "claude-test"))
        if body.get("stream"):
            events = _events(reply, message_id, tool_id, model)
            exchange.stream(sse(event, event["type"]) for event in events)
        else:
            exchange.json(200, _message(reply, message_id, tool_id, model), _HEADERS)


_HEADERS = {"request-id": "req_test"}


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
