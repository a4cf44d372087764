"""Event <-> JSON bytes: the one wire form of a bus event (NATS bodies, WebSocket relays).

Imported by the bus implementations and by whatever relays events to clients. Payloads must be
JSON-ready (str keys; str, int, finite float, bool, None, lists, mappings): encoding checks this
so a payload that would only break on NATS also breaks on the in-memory bus used by tests.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from clarion.ports import Event

_KEYS = frozenset({"type", "task_id", "session_id", "payload"})


def encode_event(event: Event) -> bytes:
    """The JSON bytes of `event`. Raises ValueError naming the first value that is not JSON."""
    if not isinstance(event.type, str) or not event.type:
        raise ValueError("event type must be a non-empty string")
    body = {
        "type": event.type,
        "task_id": event.task_id,
        "session_id": event.session_id,
        "payload": _plain(event.payload, "payload"),
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def decode_event(data: bytes | str) -> Event:
    """The Event in `data`. Raises ValueError saying what is wrong with malformed input."""
    try:
        body = json.loads(data, parse_constant=_reject_constant)
    except (ValueError, TypeError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError(f"event is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError(f"event must be a JSON object, got {type(body).__name__}")
    # Keys beyond these (an older server's `inline_handled`) are ignored.
    missing = sorted(_KEYS - body.keys())
    if missing:
        raise ValueError(f"event is missing {', '.join(missing)}")
    type_, task_id, session_id = body["type"], body["task_id"], body["session_id"]
    payload = body["payload"]
    if not isinstance(type_, str) or not type_:
        raise ValueError("event type must be a non-empty string")
    if not isinstance(task_id, str):
        raise ValueError("event task_id must be a string")
    if session_id is not None and not isinstance(session_id, str):
        raise ValueError("event session_id must be a string or null")
    if not isinstance(payload, dict):
        raise ValueError("event payload must be a JSON object")
    return Event(type=type_, task_id=task_id, session_id=session_id, payload=payload)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _plain(value: Any, path: str) -> Any:
    """A copy of `value` made of plain JSON types; ValueError names the path of a bad value."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path} is {value!r}, which JSON cannot carry")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{path} has a non-string key {key!r}")
            out[key] = _plain(item, f"{path}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise ValueError(
        f"{path} is a {type(value).__name__}, not a JSON value (convert it before publishing)"
    )
