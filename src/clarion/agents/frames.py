"""Turns an ACP `session/update` into Clarion's `AgentOutput`. Pure; imported by `live`."""

from __future__ import annotations

from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from clarion.ports import AgentOutput


def _text(content: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(content, TextContentBlock):
        return content.text, {}
    return "", {"content_type": getattr(content, "type", "unknown")}


def to_output(session_id: str, generation: int, update: Any) -> AgentOutput | None:
    """The frame for `update`, or None for updates Clarion does not track (plans, usage...)."""
    if isinstance(update, AgentMessageChunk | AgentThoughtChunk):
        kind = "message" if isinstance(update, AgentMessageChunk) else "thought"
        text, data = _text(update.content)
        return AgentOutput(session_id, generation, kind, text=text, data=data)
    if isinstance(update, ToolCallStart | ToolCallProgress):
        kind = "tool_call" if isinstance(update, ToolCallStart) else "tool_call_update"
        data = {
            "tool_call_id": update.tool_call_id,
            "title": update.title,
            "kind": update.kind,
            "status": update.status,
        }
        return AgentOutput(session_id, generation, kind, data=data)
    return None
