"""Scripted stand-ins for OpenAI's two model APIs on 127.0.0.1, streaming as the real ones do:

- `ChatCompletionsServer`: `POST /v1/chat/completions` (chunks of `choices[0].delta`, then
  `data: [DONE]`), which Qwen Code, GitHub Copilot CLI's own-provider mode and every other
  OpenAI-compatible agent speak;
- `ResponsesServer`: `POST /v1/responses` (typed events ending in `response.completed`), which
  Codex speaks.

The same `Script`s as model_server.py decide the main conversation (a request that offers
tools); side requests get a short text, or the side JSON when they ask for JSON. Neither API
marks a tool result as an error, so every `ToolResult` here has `is_error` False.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from tests.published.scripted import (
    SIDE_JSON,
    Conversation,
    Exchange,
    Reply,
    Script,
    ScriptedServer,
    ToolResult,
    Turn,
    sse,
)

MODEL = "scripted-model"
_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _error(status: int, message: str) -> dict[str, Any]:
    kinds = {401: "invalid_request_error", 429: "rate_limit_exceeded"}
    codes = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
    return {
        "error": {
            "message": message,
            "type": kinds.get(status, "server_error"),
            "param": None,
            "code": codes.get(status, "server_error"),
        }
    }


def _models() -> dict[str, Any]:
    model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "clarion"}
    return {"object": "list", "data": [model]}


def _text(content: Any) -> str:
    """A message's or tool output's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and "text" in part
        )
    return "" if content is None else json.dumps(content)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p["text"]) for p in content if isinstance(p, dict) and "text" in p]
    return []


class _OpenAIServer(ScriptedServer):
    def __init__(self, script: Script) -> None:
        super().__init__(script)
        self._ids = itertools.count(1)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):06d}"

    def is_main(self, body: dict[str, Any]) -> bool:
        return bool(body.get("tools"))

    def serve_get(self, exchange: Exchange, path: str) -> None:
        if path.endswith("/models"):
            exchange.json(200, _models())
        else:
            exchange.json(404, _error(404, f"{path} is not scripted"))

    def scripted(self, exchange: Exchange, body: dict[str, Any], wants_json: bool) -> Reply | None:
        """The reply to a request, or None once an API error has been answered."""
        side = Reply(text=json.dumps(SIDE_JSON) if wants_json else "Clarion test")
        reply = self.answer(body, side)
        if reply.status != 200:
            exchange.json(reply.status, _error(reply.status, reply.text or "scripted failure"))
            return None
        return reply


# ---------------------------------------------------------------------------- chat completions


class ChatCompletionsServer(_OpenAIServer):
    """`POST /v1/chat/completions`, streamed (with `stream_options.include_usage`) or not."""

    def conversation(self, body: dict[str, Any]) -> Conversation:
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        results = _chat_tool_results(messages)
        trailing = 0
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            trailing += 1
        last = messages[-1] if messages else {}
        return Conversation(
            user_texts=[_texts(m.get("content")) for m in messages if m.get("role") == "user"],
            tool_results=results,
            turn=Turn(
                prompt=_text(last.get("content")) if last.get("role") == "user" else "",
                tool_results=results[len(results) - trailing :] if trailing else [],
                body=body,
                tool_names=[
                    str((t.get("function") or {}).get("name")) for t in body.get("tools") or []
                ],
            ),
        )

    def serve_post(self, exchange: Exchange, path: str, body: dict[str, Any]) -> None:
        if not path.endswith("/chat/completions"):
            exchange.json(404, _error(404, f"{path} is not scripted"))
            return
        response_format = (body.get("response_format") or {}).get("type")
        reply = self.scripted(exchange, body, response_format in ("json_object", "json_schema"))
        if reply is None:
            return
        completion_id = self.next_id("chatcmpl")
        call_id = self.next_id("call")
        model = str(body.get("model") or MODEL)
        if not body.get("stream"):
            exchange.json(200, _completion(reply, completion_id, call_id, model))
            return
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = _chunks(reply, completion_id, call_id, model, usage=usage)
        exchange.stream(itertools.chain((sse(c) for c in chunks), ["data: [DONE]\n\n"]))


def _chat_tool_results(messages: list[dict[str, Any]]) -> list[ToolResult]:
    names: dict[str, str] = {}
    results: list[ToolResult] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            results.append(
                ToolResult(
                    tool_use_id=call_id,
                    name=names.get(call_id, str(message.get("name", ""))),
                    text=_text(message.get("content")),
                    is_error=False,
                )
            )
    return results


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool else "stop"


def _completion(reply: Reply, completion_id: str, call_id: str, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": reply.tool, "arguments": json.dumps(reply.tool_input)},
            }
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": _USAGE,
    }


def _chunks(
    reply: Reply, completion_id: str, call_id: str, model: str, *, usage: bool
) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if reply.text:
        yield chunk({"content": reply.text})
    if reply.tool:
        call = {"index": 0, "id": call_id, "type": "function"}
        yield chunk({"tool_calls": [{**call, "function": {"name": reply.tool, "arguments": ""}}]})
        arguments = json.dumps(reply.tool_input)
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]})
    yield chunk({}, _finish(reply))
    if usage:
        yield {**chunk({}), "choices": [], "usage": _USAGE}


# ---------------------------------------------------------------------------------- responses


class ResponsesServer(_OpenAIServer):
    """`POST /v1/responses`, streamed as typed server-sent events. A tool the request declares
    as `custom` (Codex's `apply_patch`) is called with `tool_input["input"]` as its raw input."""

    def conversation(self, body: dict[str, Any]) -> Conversation:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        results = _response_tool_results(items)
        trailing = 0
        for item in reversed(items):
            if not str(item.get("type", "")).endswith("_call_output"):
                break
            trailing += 1
        last = items[-1] if items else {}
        users = [
            i for i in items if i.get("type", "message") == "message" and i.get("role") == "user"
        ]
        return Conversation(
            user_texts=[_texts(i.get("content")) for i in users],
            tool_results=results,
            turn=Turn(
                prompt=_text(last.get("content")) if last in users else "",
                tool_results=results[len(results) - trailing :] if trailing else [],
                body=body,
                tool_names=list(_response_tools(body)),
            ),
        )

    def serve_post(self, exchange: Exchange, path: str, body: dict[str, Any]) -> None:
        if not path.endswith("/responses"):
            exchange.json(404, _error(404, f"{path} is not scripted"))
            return
        text_format = ((body.get("text") or {}).get("format") or {}).get("type")
        reply = self.scripted(exchange, body, text_format in ("json_object", "json_schema"))
        if reply is None:
            return
        items = list(self._output(reply, _response_tools(body)))
        response = {
            "id": self.next_id("resp"),
            "object": "response",
            "created_at": 0,
            "model": str(body.get("model") or MODEL),
            "status": "completed",
            "output": items,
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 15,
            },
        }
        if not body.get("stream"):
            exchange.json(200, response)
            return
        exchange.stream(sse(e, str(e["type"])) for e in _response_events(response))

    def _output(self, reply: Reply, tools: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if reply.text or not reply.tool:
            yield {
                "type": "message",
                "id": self.next_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        tool = tools.get(reply.tool or "", {})
        if tool.get("type") == "custom":
            yield {
                "type": "custom_tool_call",
                "id": self.next_id("ctc"),
                "call_id": self.next_id("call"),
                "name": reply.tool,
                "input": str(reply.tool_input.get("input", "")),
                "status": "completed",
            }
        elif reply.tool:
            call = {
                "type": "function_call",
                "id": self.next_id("fc"),
                "call_id": self.next_id("call"),
                "name": tool.get("name", reply.tool),
                "arguments": json.dumps(reply.tool_input),
                "status": "completed",
            }
            if "namespace" in tool:
                call["namespace"] = tool["namespace"]
            yield call


def _response_tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tools a request offers, by the name a script calls them: a tool inside a namespace
    (Codex puts an MCP server's tools in `mcp__<server>`) as `<namespace>__<name>`."""
    tools: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                name = f"{tool.get('name')}__{inner.get('name')}"
                tools[name] = {**inner, "namespace": tool.get("name")}
        else:
            tools[str(tool.get("name") or tool.get("type"))] = tool
    return tools


def _response_tool_results(items: list[dict[str, Any]]) -> list[ToolResult]:
    names: dict[str, str] = {}
    results: list[ToolResult] = []
    for item in items:
        kind = str(item.get("type", ""))
        call_id = str(item.get("call_id"))
        if kind in ("function_call", "custom_tool_call"):
            namespace = f"{item['namespace']}__" if item.get("namespace") else ""
            names[call_id] = namespace + str(item.get("name"))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            results.append(
                ToolResult(
                    tool_use_id=call_id,
                    name=names.get(call_id, ""),
                    text=_text(item.get("output")),
                    is_error=False,
                )
            )
    return results


def _response_events(response: dict[str, Any]) -> Iterator[dict[str, Any]]:
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "response": pending}
    for index, item in enumerate(response["output"]):
        yield {"type": "response.output_item.added", "output_index": index, "item": item}
        if item["type"] == "message":
            yield {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "delta": item["content"][0]["text"],
            }
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    yield {"type": "response.completed", "response": response}
