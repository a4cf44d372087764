"""Request bodies of the HTTP API (pydantic, edges only). Responses are built from domain.wire."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from clarion.domain.models import WorkflowStep


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class CreateTask(Body):
    title: str = Field(min_length=1, max_length=500)
    description: str = Field(default="", max_length=100_000)
    workspace: str | None = None
    # A configured repository (docs/workspaces.md); omitted: the workspace's default, if any.
    repository: str | None = Field(default=None, min_length=1, max_length=200)


class MoveTask(Body):
    step: WorkflowStep = Field(json_schema_extra={"enum": [s.value for s in WorkflowStep]})
    model_config = ConfigDict(extra="ignore", strict=False)


class StartSession(Body):
    agent: str = Field(min_length=1)
    prompt: str | None = None
    # Omitted: the task's first session is its primary one.
    is_primary: bool | None = None


class Prompt(Body):
    text: str = Field(min_length=1, max_length=100_000)


class Finish(Body):
    state: Literal["completed", "failed", "cancelled"]


class AnswerIn(Body):
    question_id: str = Field(min_length=1)
    selected_options: list[str] = Field(default_factory=list, description="option ids")
    custom_text: str | None = Field(default=None, max_length=2000)


# The schema of a body says which of its shapes the server takes: the properties alone
# would also allow the empty ones (no answer and no skip, no option and no cancel), which
# the server refuses with 400.
_ANSWERS_OR_SKIP: dict[str, Any] = {
    "oneOf": [
        {
            "title": "Answer",
            "required": ["answers"],
            "properties": {"answers": {"minItems": 1}, "rejected": {"const": False}},
        },
        {
            "title": "Skip",
            "required": ["rejected"],
            "properties": {"rejected": {"const": True}, "answers": {"maxItems": 0}},
        },
    ]
}
_OPTION_OR_CANCEL: dict[str, Any] = {
    "oneOf": [
        {
            "title": "Option",
            "required": ["option_id"],
            "properties": {
                "option_id": {"type": "string", "minLength": 1},
                "cancelled": {"const": False},
            },
        },
        {
            "title": "Cancel",
            "required": ["cancelled"],
            "properties": {"cancelled": {"const": True}, "option_id": {"type": "null"}},
        },
    ]
}


class Respond(Body):
    """The shape of a response: at least one answer, or a skip (`rejected: true` and no
    answers). The bundle's own questions decide the rest (which ids and options exist, one
    answer per question), so the route validates it against the bundle."""

    model_config = ConfigDict(json_schema_extra=_ANSWERS_OR_SKIP)

    answers: list[AnswerIn] = Field(default_factory=list)
    rejected: bool = False
    reject_reason: str | None = Field(default=None, max_length=2000)


class DecidePermission(Body):
    """A decision on a permission request: one of the agent's option ids, or a cancel. The
    request's own options decide which ids exist, so the route checks it against them."""

    model_config = ConfigDict(json_schema_extra=_OPTION_OR_CANCEL)

    option_id: str | None = Field(default=None, min_length=1)
    cancelled: bool = False


class ReviewCommentBody(Body):
    path: str = Field(min_length=1, max_length=4096)
    line: int | None = Field(default=None, ge=1)
    body: str = Field(min_length=1, max_length=20_000)

    @field_validator("line", mode="before")
    @classmethod
    def _integral(cls, value: object) -> object:
        # JSON has one number type: `12.0` is the integer 12 to a JSON Schema validator.
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


class ReviewTask(Body):
    """`POST /tasks/{task_id}/review`: at least one comment or a summary."""

    comments: list[ReviewCommentBody] = Field(default_factory=list, max_length=500)
    summary: str | None = Field(default=None, max_length=20_000)
