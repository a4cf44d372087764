"""Reading request bodies: JSON objects only, pydantic errors as InvalidInput naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.types import Message

from clarion.api.bodies import parse_body, read_json_object
from clarion.domain.errors import InvalidInput


def request_with(body: bytes) -> Request:
    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    return Request(scope, receive)


async def test_a_json_object_is_returned_as_a_dict() -> None:
    assert await read_json_object(request_with(b'{"a": [1, {"b": null}]}')) == {
        "a": [1, {"b": None}]
    }


@pytest.mark.parametrize(
    "raw", [b"", b"   ", b"{", b"{'a': 1}", b"\xff\xfe", b"NaN", b'{"a": NaN}']
)
async def test_a_body_that_is_not_json_is_invalid_json(raw: bytes) -> None:
    with pytest.raises(InvalidInput) as caught:
        await read_json_object(request_with(raw))
    assert caught.value.code == "invalid_json"
    assert caught.value.field is None


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b"[]", "an array"),
        (b'"x"', "a string"),
        (b"3", "a number"),
        (b"null", "null"),
        (b"true", "a boolean"),
    ],
)
async def test_json_that_is_not_an_object_is_invalid_request_at_the_root(
    raw: bytes, kind: str
) -> None:
    with pytest.raises(InvalidInput, match=kind) as caught:
        await read_json_object(request_with(raw))
    assert caught.value.code == "invalid_request"
    assert caught.value.field == "$"


async def test_an_empty_body_may_be_allowed_as_an_empty_object() -> None:
    assert await read_json_object(request_with(b""), allow_empty=True) == {}
    assert await read_json_object(request_with(b'{"x": 1}'), allow_empty=True) == {"x": 1}


class Answer(BaseModel):
    model_config = ConfigDict(strict=True)
    question_id: str
    selected_options: list[str] = []
    custom_text: str = Field(default="", max_length=5)


class Respond(BaseModel):
    model_config = ConfigDict(strict=True)
    answers: list[Answer] = []
    rejected: bool = False


def test_a_valid_body_becomes_the_model() -> None:
    parsed = parse_body(Respond, {"answers": [{"question_id": "db"}], "rejected": False})
    assert parsed == Respond(answers=[Answer(question_id="db")])


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"answers": [{"question_id": "db"}, {"question_id": 5}]}, "answers[1].question_id"),
        ({"answers": [{}]}, "answers[0].question_id"),
        (
            {"answers": [{"question_id": "a", "selected_options": ["x", 2]}]},
            "answers[0].selected_options[1]",
        ),
        ({"answers": [{"question_id": "a", "custom_text": "too long"}]}, "answers[0].custom_text"),
        ({"answers": "nope"}, "answers"),
        ({"rejected": "yes"}, "rejected"),
        ([1], "$"),
    ],
)
def test_a_wrong_shape_is_invalid_request_naming_the_first_bad_field(raw: Any, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_body(Respond, raw)
    assert caught.value.code == "invalid_request"
    assert caught.value.field == field
    assert caught.value.message.startswith(f"{field}: ")


def test_the_code_can_be_chosen_by_the_route() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_body(Respond, {"rejected": 1}, code="invalid_response")
    assert caught.value.code == "invalid_response"
    assert caught.value.field == "rejected"
