"""Reading request bodies: JSON objects in, pydantic models out, InvalidInput for anything else.

Imported by the HTTP routes and by api/errors.py (for `first_error`). Routes read bodies through
these so that a bad body is always a 400 naming the field, never FastAPI's 422.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

import pydantic
from starlette.requests import Request

from clarion.domain.errors import InvalidInput, field_path

ROOT = "$"  # the `field` of an error about the body as a whole
# No body of the contract nests more than a few levels; anything far deeper is refused before a
# validator or serializer recurses through it (the C parser itself overflows near 1,000).
MAX_DEPTH = 100

Model = TypeVar("Model", bound=pydantic.BaseModel)


def first_error(errors: Sequence[Any]) -> tuple[str, str]:
    """(field path, message) of the first pydantic-style error dict (`loc`, `msg`)."""
    if not errors:
        return ROOT, "invalid request body"
    first = errors[0]
    loc = tuple(part for part in first.get("loc", ()) if isinstance(part, str | int))
    return field_path(loc, ROOT), str(first.get("msg", "invalid value"))


async def read_json_object(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """The body as a JSON object. Not JSON: InvalidInput `invalid_json`; JSON but not an
    object: InvalidInput `invalid_request` with field `$`. `allow_empty` reads no body as {}."""
    raw = await request.body()
    if allow_empty and not raw.strip():
        return {}
    body = loads(raw, what="request body")
    if not isinstance(body, dict):
        raise InvalidInput(
            f"request body must be a JSON object, got {_json_kind(body)}",
            field=ROOT,
            code="invalid_request",
        )
    return body


def loads(raw: str | bytes, *, what: str) -> Any:
    """`raw` parsed as JSON no deeper than MAX_DEPTH; InvalidInput `invalid_json` otherwise."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN and friends
        raise InvalidInput(f"{what} is not valid JSON: {exc}", code="invalid_json") from exc
    except RecursionError as exc:
        raise _too_deep(what) from exc
    if depth_exceeds(value, MAX_DEPTH):
        raise _too_deep(what)
    return value


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether arrays and objects in `value` nest more than `limit` deep (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _too_deep(what: str) -> InvalidInput:
    return InvalidInput(
        f"{what} nests arrays or objects too deep (more than {MAX_DEPTH} levels)",
        code="invalid_json",
    )


def parse_body(model_cls: type[Model], raw: Any, *, code: str = "invalid_request") -> Model:
    """`raw` validated as `model_cls`; the first error becomes InvalidInput(code, field)."""
    try:
        return model_cls.model_validate(raw)
    except pydantic.ValidationError as exc:
        field, message = first_error(exc.errors(include_url=False))
        raise InvalidInput(f"{field}: {message}", field=field, code=code) from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
