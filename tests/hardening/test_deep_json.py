"""JSON nested far deeper than any real body is refused as bad input, never a 500."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import ServerProcess
from tests.hardening.conftest import assert_no_traceback

pytestmark = pytest.mark.e2e


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [150, 5_000, 100_000])
def test_deeply_nested_request_body_is_a_400_not_a_500(server: ServerProcess, depth: int) -> None:
    before = server.ok("GET", "/tasks")["total"]
    body = '{"title": ' + nested(depth) + "}"
    response = server.request(
        "POST", "/tasks", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_json"
    assert "deep" in error["message"]
    assert error["retryable"] is False
    assert server.ok("GET", "/tasks")["total"] == before  # nothing was written
    assert_no_traceback(server)


def test_deeply_nested_respond_body_is_a_400(server: ServerProcess) -> None:
    response = server.request(
        "POST",
        "/clarification/nope/respond",
        content='{"answers": ' + nested(10_000) + "}",
        headers={"Content-Type": "application/json"},
    )
    # Unknown bundles are 404 before the body is read; a bad body must never turn into a 500.
    assert response.status_code in (400, 404), response.text
    assert_no_traceback(server)


def test_moderately_nested_body_is_still_read(server: ServerProcess) -> None:
    # Depth well inside the limit: parsed, then refused by the model as the wrong type.
    body = json.dumps({"title": json.loads(nested(20))})
    response = server.request(
        "POST", "/tasks", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["field"] == "title"
