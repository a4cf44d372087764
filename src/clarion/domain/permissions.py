"""Agent permission requests: the profile policy, the durable row's metadata and its views.

Pure. A permission request is one `permission_request` transcript row; its `metadata.status`
moves once from `pending` to a decision (`approved`, `rejected`, `cancelled`) or, for a request
a previous process left pending, to `expired`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from clarion.domain.models import Message

ASK_TOOL = "ask_user_question"
# The name Clarion gives its MCP endpoint when it offers it to an agent.
CLARION_MCP_SERVER = "clarion"
# The ACP tool kinds, in the protocol's order: what a permission rule of an agent profile may
# name, and what the built-in agent's permission scenario may ask about.
TOOL_KINDS = (
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
)
# A raw tool input is shown to a person and stored; beyond this it is cut (and says so).
RAW_INPUT_LIMIT = 4000


class PermissionStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class PermissionKey:
    STATUS = "status"
    TOOL_CALL = "tool_call"
    OPTIONS = "options"
    DECISION = "decision"
    DECIDED_BY = "decided_by"
    DECIDED_AT = "decided_at"
    REASON = "reason"


@dataclass(frozen=True, slots=True)
class PermissionRules:
    """`[agents.NAME.permissions]`: tool kinds decided without asking."""

    allow: frozenset[str] = frozenset()
    reject: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class PermissionOption:
    option_id: str
    name: str
    kind: str  # allow_once | allow_always | reject_once | reject_always


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    tool_call_id: str
    title: str
    kind: str
    raw_input: Any = None


def names_ask_tool(title: str) -> bool:
    """Clarion's own question tool, however the agent prefixes it (`mcp__clarion__...`)."""
    return ASK_TOOL in (title or "")


def calls_clarion(tool: ToolCallInfo) -> bool:
    """A call of Clarion's own tool: named in the title (most agents), or a call of any tool of
    Clarion's MCP server, which serves nothing else (Codex's generic "Approve MCP tool call"
    carries the server's name in its input)."""
    if names_ask_tool(tool.title):
        return True
    raw = tool.raw_input
    return isinstance(raw, Mapping) and raw.get("server_name") == CLARION_MCP_SERVER


def policy_verdict(rules: PermissionRules, tool: ToolCallInfo) -> str | None:
    """ "allow", "reject", or None when the person must decide."""
    if calls_clarion(tool):
        return "allow"
    if tool.kind in rules.reject:
        return "reject"
    if tool.kind in rules.allow:
        return "allow"
    return None


def pick_option(options: Sequence[PermissionOption], verdict: str) -> PermissionOption | None:
    """The option a policy verdict selects: allow -> first allow_once, else allow_always;
    reject -> first reject_once, else reject_always. None when the agent offered none."""
    order = (
        ("allow_once", "allow_always") if verdict == "allow" else ("reject_once", "reject_always")
    )
    for kind in order:
        for option in options:
            if option.kind == kind:
                return option
    return None


def status_of_option(option: PermissionOption) -> PermissionStatus:
    return (
        PermissionStatus.APPROVED if option.kind.startswith("allow") else PermissionStatus.REJECTED
    )


def bounded_input(raw_input: Any) -> Any:
    """The tool's raw input as stored: unchanged when small, else a truncated JSON text."""
    if raw_input is None:
        return None
    try:
        text = json.dumps(raw_input, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(raw_input)
        return text[:RAW_INPUT_LIMIT]
    if len(text) <= RAW_INPUT_LIMIT:
        return raw_input
    return text[:RAW_INPUT_LIMIT] + " …(truncated)"


def request_metadata(
    tool: ToolCallInfo,
    options: Sequence[PermissionOption],
    *,
    status: PermissionStatus = PermissionStatus.PENDING,
    decision: Mapping[str, Any] | None = None,
    decided_at: str | None = None,
) -> dict[str, Any]:
    call: dict[str, Any] = {
        "tool_call_id": tool.tool_call_id,
        "title": tool.title,
        "kind": tool.kind,
    }
    raw = bounded_input(tool.raw_input)
    if raw is not None:
        call["raw_input"] = raw
    meta: dict[str, Any] = {
        PermissionKey.STATUS: str(status),
        PermissionKey.TOOL_CALL: call,
        PermissionKey.OPTIONS: [
            {"option_id": o.option_id, "name": o.name, "kind": o.kind} for o in options
        ],
    }
    if decision is not None:
        meta[PermissionKey.DECISION] = dict(decision)
        meta[PermissionKey.DECIDED_BY] = decision.get("decided_by")
    if decided_at is not None:
        meta[PermissionKey.DECIDED_AT] = decided_at
    return meta


def decision_of(option: PermissionOption | None, decided_by: str) -> dict[str, Any]:
    """The wire decision: the chosen option (none for a cancellation) and who decided."""
    if option is None:
        return {"decided_by": decided_by}
    return {"option_id": option.option_id, "kind": option.kind, "decided_by": decided_by}


def options_of(message: Message) -> tuple[PermissionOption, ...]:
    raw = message.metadata.get(PermissionKey.OPTIONS) or []
    return tuple(
        PermissionOption(
            option_id=str(o.get("option_id", "")),
            name=str(o.get("name", "")),
            kind=str(o.get("kind", "")),
        )
        for o in raw
        if isinstance(o, Mapping)
    )


def status_of(message: Message) -> PermissionStatus:
    raw = message.metadata.get(PermissionKey.STATUS) or PermissionStatus.PENDING.value
    try:
        return PermissionStatus(raw)
    except ValueError:
        return PermissionStatus.PENDING


def permission_view(message: Message) -> dict[str, Any]:
    """`GET /permission/{message_id}`."""
    meta = message.metadata
    return {
        "message_id": message.id,
        "session_id": message.session_id,
        "task_id": message.task_id,
        "turn_id": message.turn_id,
        "state": str(status_of(message)),
        "tool_call": dict(meta.get(PermissionKey.TOOL_CALL) or {}),
        "options": [dict(o) for o in meta.get(PermissionKey.OPTIONS) or []],
        "decision": meta.get(PermissionKey.DECISION),
    }
