"""Event <-> JSON bytes: round trips, and clear errors for what is not an event."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import pytest

from clarion.bus.codec import decode_event, encode_event
from clarion.ports import Event


def test_an_event_round_trips() -> None:
    sent = Event(
        type="session.message.added",
        task_id="t1",
        session_id="s1",
        payload={"a": [1, {"b": None}], "c": 1.5},
    )
    assert decode_event(encode_event(sent)) == sent


def test_the_wire_form_is_a_plain_json_object() -> None:
    sent = Event(
        type="task.status_summary.updated", task_id="t1", session_id=None, payload={"revision": 2}
    )
    assert json.loads(encode_event(sent)) == {
        "type": "task.status_summary.updated",
        "task_id": "t1",
        "session_id": None,
        "payload": {"revision": 2},
    }


def test_read_only_mappings_and_tuples_encode_as_objects_and_lists() -> None:
    sent = Event(
        type="x",
        task_id="t",
        session_id=None,
        payload=MappingProxyType({"ids": ("a", "b"), "m": MappingProxyType({"k": 1})}),
    )
    assert decode_event(encode_event(sent)).payload == {"ids": ["a", "b"], "m": {"k": 1}}


def test_decoding_accepts_text_and_ignores_keys_it_does_not_know() -> None:
    text = '{"type": "x", "task_id": "t", "session_id": "s", "payload": {}}'
    assert decode_event(text) == Event(type="x", task_id="t", session_id="s", payload={})
    older = (
        '{"type": "x", "task_id": "t", "session_id": "s", "payload": {}, "inline_handled": true}'
    )
    assert decode_event(older) == Event(type="x", task_id="t", session_id="s", payload={})


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({"at": datetime(2026, 1, 1, tzinfo=UTC)}, r"payload\.at is a datetime"),
        ({"nested": [1, {"bad": {1, 2}}]}, r"payload\.nested\[1\]\.bad is a set"),
        ({"x": float("nan")}, r"payload\.x is nan"),
        ({"x": float("inf")}, r"payload\.x is inf"),
        ({1: "int key"}, r"payload has a non-string key 1"),
    ],
)
def test_encoding_names_the_first_value_that_is_not_json(payload: Any, path: str) -> None:
    with pytest.raises(ValueError, match=path):
        encode_event(Event(type="x", task_id="t", session_id=None, payload=payload))


def test_encoding_refuses_an_empty_type() -> None:
    with pytest.raises(ValueError, match="type"):
        encode_event(Event(type="", task_id="t", session_id=None, payload={}))


VALID: dict[str, object] = {"type": "x", "task_id": "t", "session_id": None, "payload": {}}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not valid JSON"),
        (b"{", "not valid JSON"),
        (b"\xff\xfe\x00", "not valid JSON"),
        (b'{"payload": NaN}', "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b'"text"', "must be a JSON object"),
        (b'{"type": "x"}', "missing payload, session_id, task_id"),
        (json.dumps({**VALID, "type": ""}).encode(), "type must be a non-empty string"),
        (json.dumps({**VALID, "type": 3}).encode(), "type must be a non-empty string"),
        (json.dumps({**VALID, "task_id": None}).encode(), "task_id must be a string"),
        (json.dumps({**VALID, "session_id": 1}).encode(), "session_id must be a string or null"),
        (json.dumps({**VALID, "payload": []}).encode(), "payload must be a JSON object"),
    ],
)
def test_decoding_malformed_input_raises_value_error_saying_why(data: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        decode_event(data)


def test_decoding_ignores_keys_it_does_not_know() -> None:
    data = json.dumps({**VALID, "added_later": 1}).encode()
    assert decode_event(data) == Event(type="x", task_id="t", session_id=None, payload={})
