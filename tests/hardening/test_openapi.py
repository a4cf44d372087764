"""The OpenAPI document tells the truth: request bodies, real error responses, no 422, typed
query parameters, and a 405 whose Allow header lists every method of the path."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from tests.e2e.harness import ServerProcess
from tests.e2e.permission_steps import decide, wait_for_permission

pytestmark = pytest.mark.e2e

# POST routes that read no body.
NO_BODY = {
    "/api/v1/logout",
    "/api/v1/task-sessions/{session_id}/cancel",
    "/api/v1/clarification/{pending_id}/cancel",
    "/api/v1/clarification/{pending_id}/resend",
    "/api/v1/tasks/{task_id}/archive",
}


def document(server: ServerProcess) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/openapi.json", timeout=10)
    assert response.status_code == 200
    return dict(response.json())


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def test_every_post_with_a_body_declares_it_from_the_route_model(server: ServerProcess) -> None:
    doc = document(server)
    schemas = doc["components"]["schemas"]
    for path, method, op in operations(doc):
        if method != "post" or path in NO_BODY:
            continue
        body = op.get("requestBody")
        assert body is not None and body["required"], f"POST {path} declares no body"
        ref = body["content"]["application/json"]["schema"]["$ref"]
        assert ref.rsplit("/", 1)[1] in schemas, ref
    create = schemas["CreateTask"]
    assert create["required"] == ["title"]
    assert create["properties"]["title"]["minLength"] == 1
    move_ref = schemas["MoveTask"]["properties"]["step"]["$ref"].rsplit("/", 1)[1]
    assert schemas[move_ref]["enum"] == ["backlog", "in_progress", "review", "done"]


def test_no_operation_declares_422_and_errors_use_the_envelope(server: ServerProcess) -> None:
    doc = document(server)
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, method, op in operations(doc):
        statuses = set(op["responses"])
        assert "422" not in statuses, f"{method} {path}"
        assert {"500", "503"} <= statuses, f"{method} {path}"
        assert "401" not in statuses  # access control is off on this server
        for status in statuses - {"200", "201", "202", "204"}:
            schema = op["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}
    detail = doc["components"]["schemas"]["ErrorDetail"]
    assert set(detail["required"]) == {"code", "message", "retryable"}
    responds = doc["paths"]["/api/v1/clarification/{pending_id}/respond"]["post"]["responses"]
    assert {"400", "404", "409"} <= set(responds)


def test_the_task_read_declares_its_repository_and_worktree(server: ServerProcess) -> None:
    doc = document(server)
    read = doc["paths"]["/api/v1/tasks/{task_id}"]["get"]["responses"]["200"]
    ref = read["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    task_ref = doc["components"]["schemas"][ref]["properties"]["task"]["$ref"].rsplit("/", 1)[1]
    task = doc["components"]["schemas"][task_ref]
    assert {"repository", "worktree"} <= set(task["required"])
    worktree = doc["components"]["schemas"]["WorktreeRead"]
    assert worktree["properties"]["state"]["enum"] == ["creating", "ready", "removed"]
    assert set(worktree["required"]) == {"path", "branch", "base", "state"}
    review = doc["paths"]["/api/v1/tasks/{task_id}/review"]["post"]
    assert review["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ReviewTask"
    )


def test_limit_is_an_integer_parameter(server: ServerProcess) -> None:
    doc = document(server)
    op = doc["paths"]["/api/v1/task-sessions/{session_id}/messages"]["get"]
    limit = next(p for p in op["parameters"] if p["name"] == "limit")
    assert limit["schema"]["type"] == "integer"
    assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (1, 1000)


def test_a_bad_limit_is_still_a_400_naming_the_field(server: ServerProcess) -> None:
    task = server.create_task()
    session = server.start_session(task, "hello", agent="builtin")
    for bad in ("abc", "0", "1001", ""):
        response = server.request("GET", f"/task-sessions/{session}/messages?limit={bad}")
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["error"]["field"] == "limit"
    assert server.ok("GET", f"/task-sessions/{session}/messages?limit=1")["messages"]


def test_method_not_allowed_lists_every_method_of_the_path(server: ServerProcess) -> None:
    for path, allowed in (("/tasks", "GET, POST"), ("/tasks/t1", "GET")):
        response = server.request("OPTIONS", path)
        assert response.status_code == 405
        assert response.headers["allow"] == allowed
        assert response.json()["error"]["code"] == "method_not_allowed"


def _validator(doc: dict[str, Any], name: str) -> Draft202012Validator:
    """A validator of the component `name`, its references resolved in the document."""
    return Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    )


# (body, what the server does with it on a real active bundle with the question `db`):
# the schema must allow exactly the bodies the server takes.
RESPOND_BODIES: list[tuple[dict[str, Any], bool]] = [
    ({"answers": [], "rejected": False}, False),
    ({}, False),
    ({"rejected": False}, False),
    ({"answers": [{"question_id": "db", "selected_options": ["sqlite"]}], "rejected": True}, False),
    ({"rejected": True}, True),
    ({"rejected": True, "answers": [], "reject_reason": "later"}, True),
    ({"answers": [{"question_id": "db", "selected_options": ["sqlite"]}]}, True),
]


def test_the_respond_schema_allows_exactly_the_shapes_the_server_takes(
    server: ServerProcess,
) -> None:
    doc = document(server)
    for path in ("/api/v1/clarification/{pending_id}/respond", "/api/v1/a/{token}/respond"):
        body = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        assert body["schema"] == {"$ref": "#/components/schemas/Respond"}, path
    schema = _validator(doc, "Respond")
    _, pending_id = server.live_question()
    for sent, taken in RESPOND_BODIES:
        assert schema.is_valid(sent) is taken, sent
        if not taken:  # an accepted body would answer the question: the schema says it
            refused = server.respond(pending_id, sent)
            assert refused.status_code == 400, (sent, refused.text)
    assert server.respond(pending_id, RESPOND_BODIES[-1][0]).status_code == 200


def test_the_permission_schema_allows_exactly_the_shapes_the_server_takes(
    server: ServerProcess,
) -> None:
    doc = document(server)
    schema = _validator(doc, "DecidePermission")
    session_id = server.start_session(server.create_task(), "/scenario permission")
    row = wait_for_permission(server, session_id)
    option = str(row["metadata"]["options"][0]["option_id"])
    refused_bodies: list[dict[str, Any]] = [
        {"option_id": ""},
        {},
        {"cancelled": False},
        {"option_id": None},
        {"option_id": option, "cancelled": True},
    ]
    for sent in refused_bodies:
        assert not schema.is_valid(sent), sent
        refused = decide(server, str(row["id"]), sent)
        assert refused.status_code == 400, (sent, refused.text)
    for sent in ({"cancelled": True}, {"option_id": None, "cancelled": True}):
        assert schema.is_valid(sent), sent
    taken = {"option_id": option, "cancelled": False}
    assert schema.is_valid(taken)
    assert decide(server, str(row["id"]), taken).status_code == 200
