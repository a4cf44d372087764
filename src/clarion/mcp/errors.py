"""One clean line per bad tool call: `invalid <field>: <what is wrong>`.

The SDK reports arguments that fail the input schema as pydantic's multi-line dump (input
values, a docs URL) and prefixes every tool error with `Error executing tool <name>: `; the
Asker's own InvalidInput message already starts with its field. A model reads these to correct
its next call, so each becomes one line naming the field once.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from clarion.domain.errors import InvalidInput, field_path
from clarion.domain.questions import MAX_OPTIONS, MAX_QUESTIONS, MIN_OPTIONS, MIN_QUESTIONS

# The same words the Asker uses for a count out of range.
_COUNTS = {"questions": (MIN_QUESTIONS, MAX_QUESTIONS), "options": (MIN_OPTIONS, MAX_OPTIONS)}


def _what(error: Any) -> str:
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "string_too_short":
        return "must not be empty"
    loc = error.get("loc") or ()
    if kind in ("too_short", "too_long") and loc and loc[-1] in _COUNTS:
        low, high = _COUNTS[loc[-1]]
        return f"must have {low} to {high} {loc[-1]}, got {ctx.get('actual_length')}"
    if kind == "list_type":
        return "must be a list"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return "must be an object"
    if kind == "string_type":
        return "must be a string"
    message = str(error.get("msg", "is invalid"))
    return message[:1].lower() + message[1:]


def from_validation(exc: ValidationError) -> str:
    """The first schema violation as `invalid <field>: <what>`."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "invalid arguments"
    first = errors[0]
    return f"invalid {field_path(tuple(first.get('loc', ())), 'arguments')}: {_what(first)}"


def from_invalid_input(exc: InvalidInput) -> str:
    """The Asker's refusal as `invalid <field>: <what>`, the field named once."""
    field = exc.field or "arguments"
    message = exc.message
    prefix = f"{exc.field}: "
    if exc.field and message.startswith(prefix):
        message = message[len(prefix) :]
    return f"invalid {field}: {message}"
