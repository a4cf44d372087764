"""The OpenAPI document: request bodies and error responses as the routes really behave.

Routes read their bodies themselves (so a bad body is the contract's 400, never FastAPI's 422),
which hides the body from FastAPI's generator; each route therefore declares its body model with
`body(...)` and its error statuses with `errors(...)`, and `install_openapi` puts the body models
in `components/schemas`, drops the 422 FastAPI adds to every operation with parameters, and
declares bearer authentication when access control is on.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field

_REF = "#/components/schemas/{model}"

_DESCRIPTIONS = {
    400: "Bad input (`invalid_json`, `invalid_request` with `field`, ...); nothing changed",
    401: "Missing or unknown API token (access control on)",
    404: "Unknown, or not visible to the caller",
    409: "Conflicts with the current state (`not_active` with `state`, `pending_input`, ...)",
    500: "Server failure; `retryable` says whether the same request may be sent again",
    503: "Clarion is starting (recovery runs); retry shortly",
}


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="allow")
    code: str
    message: str
    retryable: bool
    field: str | None = Field(default=None, description="the first bad field, `answers[1].x`")
    state: str | None = Field(default=None, description="the bundle's state, on `not_active`")
    response: dict[str, Any] | None = Field(default=None, description="the winning response")


class ErrorEnvelope(BaseModel):
    error: ErrorDetail


class WorktreeRead(BaseModel):
    """A task's git worktree (docs/workspaces.md)."""

    model_config = ConfigDict(extra="allow")
    path: str
    branch: str = Field(description="`clarion/<task_id>`")
    base: str
    state: Literal["creating", "ready", "removed"]


class TaskRead(BaseModel):
    """A task as every route reads it (more fields may be added, none renamed)."""

    model_config = ConfigDict(extra="allow")
    id: str
    title: str
    description: str
    workspace: str
    workflow_step: Literal["backlog", "in_progress", "review", "done"]
    status_summary: dict[str, Any] | None
    primary_session_pending_action: str | None
    task_pending_action: str | None
    repository: str | None = Field(description="the configured repository, or null")
    worktree: WorktreeRead | None = Field(description="null until its first session starts")
    created_at: str
    updated_at: str


class TaskEnvelope(BaseModel):
    task: TaskRead


def task_read(status: int = 200) -> dict[int | str, dict[str, Any]]:
    """`responses=` entry: the route answers `{"task": Task}` with `status`."""
    return {status: {"model": TaskEnvelope, "description": "The task"}}


# Body models declared by `body(...)`, added to components/schemas when the document is built.
_BODY_MODELS: dict[str, type[BaseModel]] = {}


def errors(*statuses: int, guarded: bool = True) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: each status with the error envelope. Any route can answer 500
    and 503 (starting); a guarded one also 401 (dropped from the document when access control
    is off, since it cannot happen then)."""
    wanted = sorted({*statuses, 500, 503, *((401,) if guarded else ())})
    return {s: {"model": ErrorEnvelope, "description": _DESCRIPTIONS[s]} for s in wanted}


def body(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra=` declaring `model` as the (required) JSON request body."""
    _BODY_MODELS[model.__name__] = model
    ref = {"$ref": _REF.format(model=model.__name__)}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


def install_openapi(
    app: FastAPI,
    *,
    bearer_auth: bool,
    open_paths: frozenset[str],
    enums: dict[tuple[str, str], list[str | None]],
) -> None:
    """Build the document once, on first request, from the routes and their declarations;
    `enums` pins a body property to the values this server accepts."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for name, model in _BODY_MODELS.items():
            schema = model.model_json_schema(ref_template=_REF)
            schemas.update(schema.pop("$defs", {}))
            schemas[name] = schema
        # Values only known at startup (the configured agent profiles): any other is a 400.
        for (model_name, prop), values in enums.items():
            schemas[model_name]["properties"][prop]["enum"] = values
        # The contract answers bad input with 400, never 422.
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        for path, operations in document["paths"].items():
            for operation in operations.values():
                operation["responses"].pop("422", None)
                if not bearer_auth:
                    operation["responses"].pop("401", None)
                if path in open_paths:
                    operation["security"] = []
        if bearer_auth:
            document["components"]["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"}
            }
            document["security"] = [{"bearer": []}]
        app.openapi_schema = document
        return document

    app.openapi = build  # type: ignore[method-assign]
